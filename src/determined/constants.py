"""Constants of upstream 0.13's ``determined.constants`` that user code may read."""

MAX_SLOTS_PER_AGENT = 16
DEFAULT_SCHEDULING_UNIT = 100
DEFAULT_SEARCHER_CFG = {"name": "single", "max_length": {"batches": 100}}
DEFAULT_RESOURCES_CFG = {"slots_per_trial": 1, "native_parallel": False}
DEFAULT_OPTIMIZATIONS = {
    "aggregation_frequency": 1,
    "average_aggregated_gradients": True,
    "average_training_metrics": False,
    "gradient_compression": False,
    "mixed_precision": "O0",
}
DEFAULT_EXP_CFG = {
    "searcher": DEFAULT_SEARCHER_CFG,
    "scheduling_unit": DEFAULT_SCHEDULING_UNIT,
    "resources": DEFAULT_RESOURCES_CFG,
    "optimizations": DEFAULT_OPTIMIZATIONS,
}
HOROVOD_STARTUP_TIMEOUT_SECONDS = 1200
HOROVOD_AUTOTUNE_LOG_FILEPATH = "/tmp/autotune_log.csv"
HOROVOD_GLOO_TIMEOUT_SECONDS = 240
INTER_NODE_NETWORK_INTERFACE = "DET_INTER_NODE_NETWORK_INTERFACE"
TRIAL_WORKLOAD_MANAGER = "TRIAL_WORKLOAD_MANAGER"
NATIVE_WORKLOAD_MANAGER = "NATIVE_WORKLOAD_MANAGER"
