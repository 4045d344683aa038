"""Upstream 0.13's ``determined_common.api``: REST helpers, sessions and experiment helpers,
implemented against this master's REST API (``/api/v1``)."""

from determined_common.api import authentication, errors, metric, request
from determined_common.api.authentication import Authentication, Session, salt_and_hash
from determined_common.api.experiment import (
    activate_experiment,
    create_experiment,
    create_experiment_and_follow_logs,
    create_test_experiment_and_follow_logs,
    follow_experiment_logs,
    follow_test_experiment_logs,
    generate_random_hparam_values,
    make_test_experiment_config,
    patch_experiment,
)
from determined_common.api.request import (
    WebSocket,
    add_token_to_headers,
    delete,
    do_request,
    get,
    make_url,
    open,
    parse_master_address,
    patch,
    post,
    put,
    ws,
)

__all__ = [
    "Authentication", "Session", "WebSocket", "activate_experiment", "add_token_to_headers",
    "authentication", "create_experiment", "create_experiment_and_follow_logs",
    "create_test_experiment_and_follow_logs", "delete", "do_request", "errors",
    "follow_experiment_logs", "follow_test_experiment_logs", "generate_random_hparam_values",
    "get", "make_test_experiment_config", "make_url", "metric", "open", "parse_master_address",
    "patch", "patch_experiment", "post", "put", "request", "salt_and_hash", "ws",
]
