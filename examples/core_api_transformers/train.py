"""A Hugging Face ``Trainer`` script on the platform through ``DetCallback`` (as in
Determined 0.38). The model is a 2-layer BERT built from a config with random weights,
trained on synthetic token sequences: nothing is downloaded.

By hand (``python train.py``) it trains ``--max-steps`` steps, writing metrics and
checkpoints under ``./determined-core`` (``DET_CORE_DIR``) and resuming from the latest
one when run again there. As an experiment's entrypoint it takes its hyperparameters
from the trial and its length from the searcher (``searcher.max_length`` in batches,
records or epochs).
"""

import argparse
import os

os.environ.setdefault("USE_TF", "0")  # PyTorch only, even where TensorFlow is installed

import numpy as np  # noqa: E402
import torch  # noqa: E402
try:
    import transformers  # noqa: E402
except ModuleNotFoundError as e:
    raise SystemExit(f"{e}: this example needs the 'transformers' extra "
                     "(pip install -e '.[transformers]' in the platform's checkout)")

import determined as det  # noqa: E402
from determined.transformers import DetCallback  # noqa: E402

SEQ_LEN = 16
VOCAB = 64


class CountingTask(torch.utils.data.Dataset):
    """Random token sequences; the label says whether most tokens are in the lower half
    of the vocabulary."""

    def __init__(self, size: int, seed: int):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(1, VOCAB, (size, SEQ_LEN), generator=g)
        self.labels = ((self.ids < VOCAB // 2).sum(dim=1) > SEQ_LEN // 2).long()

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(SEQ_LEN, dtype=torch.long),
                "labels": self.labels[i]}


def accuracy(prediction: transformers.EvalPrediction):
    return {"accuracy": float((np.argmax(prediction.predictions, axis=1)
                               == prediction.label_ids).mean())}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-steps", type=int, default=60)
    parser.add_argument("--output-dir", default="hf-output")
    args = parser.parse_args()

    info = det.get_cluster_info()
    hparams = info.trial.hparams if info else {"learning_rate": 1e-3, "batch_size": 16,
                                               "hidden_dropout": 0.1}
    max_steps, epochs = args.max_steps, 1
    length = info.trial._config.get("searcher", {}).get("max_length") if info else None
    if length and "epochs" in length:
        max_steps, epochs = -1, int(length["epochs"])  # the Trainer counts the epochs
    elif length and "records" in length:
        max_steps = -(-int(length["records"]) // int(hparams["batch_size"]))
    elif length:
        max_steps = int(length["batches"])

    training_args = transformers.TrainingArguments(
        output_dir=args.output_dir, max_steps=max_steps, num_train_epochs=epochs,
        per_device_train_batch_size=int(hparams["batch_size"]), per_device_eval_batch_size=64,
        learning_rate=float(hparams["learning_rate"]), lr_scheduler_type="linear",
        eval_strategy="steps", eval_steps=20, save_strategy="steps", save_steps=20,
        logging_steps=10, seed=info.trial.trial_seed if info else 0, use_cpu=True,
        report_to=[], disable_tqdm=True, dataloader_num_workers=0)
    config = transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=SEQ_LEN,
        hidden_dropout_prob=float(hparams["hidden_dropout"]), num_labels=2)

    with det.core.init() as core_context:
        det_callback = DetCallback(core_context, training_args)  # downloads the latest checkpoint
        transformers.set_seed(training_args.seed)
        trainer = transformers.Trainer(
            model=transformers.BertForSequenceClassification(config), args=training_args,
            train_dataset=CountingTask(512, seed=1), eval_dataset=CountingTask(128, seed=2),
            compute_metrics=accuracy, callbacks=[det_callback])
        trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)


if __name__ == "__main__":
    main()
