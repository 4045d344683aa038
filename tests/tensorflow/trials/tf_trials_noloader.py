"""A TensorFlowTrial whose module lacks make_data_loaders."""

from determined.tensorflow import TensorFlowTrial


class OrphanTrial(TensorFlowTrial):
    def optimizer(self):
        return None

    def build_graph(self, record, is_training):
        return {}

    def validation_metrics(self):
        return []
