"""Task configs: defaults per kind and errors naming the field (pure, no master)."""

import pytest

from determined.errors import InvalidConfigError
from determined.master.tasks import default_description, validate_task_config
from determined.master.tasks._spec import environment_variables


def test_defaults_per_kind():
    assert validate_task_config("notebook", None)["resources"]["slots"] == 1
    assert validate_task_config("shell", {})["resources"]["slots"] == 1
    assert validate_task_config("tensorboard", {})["resources"]["slots"] == 0
    cmd = validate_task_config("command", {"entrypoint": "echo hi"})
    assert cmd["entrypoint"] == ["echo hi"] and cmd["resources"]["slots"] == 1


@pytest.mark.parametrize("kind,raw,field", [
    ("command", {}, "entrypoint"),
    ("command", {"entrypoint": ["ok", 3]}, "entrypoint"),
    ("notebook", {"entrypoint": "x"}, "entrypoint"),
    ("shell", {"resources": {"slots": -1}}, "resources.slots"),
    ("shell", {"resources": {"slots": True}}, "resources.slots"),
    ("shell", {"resources": {"weight": 0}}, "resources.weight"),
    ("shell", {"idle_timeout": "soon"}, "idle_timeout"),
    ("shell", {"nonsense": 1}, "nonsense"),
    ("shell", {"environment": {"environment_variables": ["NOEQUALS"]}},
     "environment.environment_variables"),
    ("rocket", {}, "kind"),
])
def test_errors_name_the_field(kind, raw, field):
    with pytest.raises(InvalidConfigError) as info:
        validate_task_config(kind, raw)
    assert info.value.errors[0][0] == field


def test_environment_variables_list_or_mapping():
    assert environment_variables({"environment": {"environment_variables": ["A=1", "B=x=y"]}}) \
        == {"A": "1", "B": "x=y"}
    assert environment_variables({"environment": {"environment_variables": {"C": 2}}}) == {"C": "2"}


def test_bind_mounts_stay_inside_the_working_directory():
    from determined.master.tasks._spec import bind_mounts

    config = validate_task_config("shell", {"bind_mounts": [
        {"host_path": "/data", "container_path": "/data"},
        {"host_path": "/srv/x", "container_path": "a/./b/", "read_only": True}]})
    assert bind_mounts(config) == [("/data", "data"), ("/srv/x", "a/b")]
    for mount, field in (({"host_path": "rel", "container_path": "x"}, "host_path"),
                         ({"host_path": "/h", "container_path": "a/../.."}, "container_path"),
                         ({"host_path": "/h", "container_path": "/"}, "container_path"),
                         ({"host_path": "/h"}, "container_path")):
        with pytest.raises(InvalidConfigError, match=f"bind_mounts\\[0\\].{field}"):
            validate_task_config("command", {"entrypoint": "true", "bind_mounts": [mount]})
    with pytest.raises(InvalidConfigError, match="bind_mounts"):
        validate_task_config("shell", {"bind_mounts": "/data:/data"})


def test_default_descriptions_say_what_the_task_is():
    """Tasks started without a description were listed with an empty one."""
    cmd = validate_task_config("command", {"entrypoint": ["python", "prep.py", "a b"]})
    assert default_description("command", cmd, [], []) == "python prep.py 'a b'"
    one = validate_task_config("command", {"entrypoint": "sleep 60 && echo done"})
    assert default_description("command", one, [], []) == "sleep 60 && echo done"
    long = validate_task_config("command", {"entrypoint": ["echo", "x" * 200]})
    assert len(default_description("command", long, [], [])) == 80
    assert default_description("tensorboard", {}, [1, 2], [17]) == \
        "TensorBoard of experiments 1, 2; trial 17"
    assert default_description("tensorboard", {}, [], [3, 4]) == "TensorBoard of trials 3, 4"
    assert default_description("notebook", {}, [], []) == "JupyterLab"
    assert default_description("shell", {}, [], []) == "Shell"
