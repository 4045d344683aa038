"""Bad trial definitions fail with errors naming the class and the method."""

import os

import pytest
from tf_trial_utils import TrialModule, make_config, plan, run_trial

from determined.errors import InvalidTrialError, UserCodeError

TRIALS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trials")
keras_trials = TrialModule("keras_trials", TRIALS)


@pytest.mark.parametrize(
    "trial, method, words",
    [
        ("UnwrappedModelTrial", "build_model", "wrap_model"),
        ("UncompiledModelTrial", "build_model", "not compiled"),
        ("NotAModelTrial", "build_model", "tf.keras.Model"),
        ("WrongLoaderTrial", "build_training_data_loader", "Received: list"),
        ("ThreeTupleWrongTrial", "build_training_data_loader", "tuple of 4 elements"),
        ("UnwrappedDatasetTrial", "build_training_data_loader", "wrap_dataset"),
        ("BadCallbacksTrial", "keras_callbacks", "tf.keras.callbacks.Callback"),
        ("RaisingModelTrial", "build_model", "boom in build_model"),
    ],
)
def test_bad_trial_names_class_and_method(trial, method, words, tmp_path):
    config = make_config(f"keras_trials:{trial}",
                         {"global_batch_size": 32, "loader": "arrays", "lr": 0.01})
    with pytest.raises(InvalidTrialError) as info:
        run_trial(TRIALS, config, plan(2), str(tmp_path))
    message = str(info.value)
    assert f"{trial}.{method}" in message and "keras_trials.py" in message, message
    assert words in message, message


def test_user_exception_carries_user_traceback(tmp_path):
    config = make_config("keras_trials:RaisingModelTrial",
                         {"global_batch_size": 32, "loader": "arrays", "lr": 0.01})
    with pytest.raises(UserCodeError) as info:
        run_trial(TRIALS, config, plan(2), str(tmp_path))
    assert 'raise RuntimeError("boom in build_model")' in info.value.user_traceback


def test_sequence_adapter_checks_arguments():
    from determined.keras import SequenceAdapter

    seq = keras_trials.DigitsSequence(*keras_trials.digits()[0], 32)
    with pytest.raises(ValueError, match="workers"):
        SequenceAdapter(seq, workers=-1)
    with pytest.raises(ValueError, match="max_queue_size"):
        SequenceAdapter(seq, max_queue_size=0)
    with pytest.raises(TypeError, match="Sequence"):
        SequenceAdapter([1, 2, 3])


def test_wrap_model_rejects_non_models():
    from determined.harness import TrialEnv
    from determined.keras import TFKerasTrialContext

    config = make_config("keras_trials:LoaderTrial", {"global_batch_size": 32})
    context = TFKerasTrialContext(TrialEnv(config, {"global_batch_size": 32}, "."))
    with pytest.raises(InvalidTrialError, match="wrap_model.*Received: str"):
        context.wrap_model("model")
    with pytest.raises(InvalidTrialError, match="wrap_dataset.*Received: list"):
        context.wrap_dataset([1, 2])
