"""Logs from other trainers, each format a module behind one decoder interface (base.py).

Bytes (or an MLflow store's rows) go in and the log wing's records come out, so the followers stay
transports that know no format and the rules read a foreign run as they read ours.

- `base.py`: the decoder interface, a file read whole (`Whole`), what a decoder could not read.
- `grouper.py`: the field map and the step grouper (a step's values -> one train record and
  one probe).
- `tfrecord.py`: an event file's records (TFRecord framing, CRC-32C checked, the scalar
  fields of an Event; no TensorFlow), read incrementally from a byte offset.
- `tensorboard.py`: event files into records: the incremental decoder (restarts and purges
  dropped as TensorBoard drops them) and the cold read's columns.
- `rows.py`: Hugging Face Trainer's `trainer_state.json`, CSV (Lightning's `metrics.csv`),
  JSONL from any writer with a field map.
- `mlflow.py`: MLflow's file store and SQLite store (read-only).
- `wandb.py`: W&B run files (`run-<id>.wandb`: LevelDB log framing, CRC-checked, the
  history, run and exit fields of a Record; no wandb), read incrementally from a byte offset.
- `protowire.py`: the protobuf varint, shared by the two formats that decode it by hand.
- `trackio.py`: a trackio project's SQLite store (read-only), one chosen run.
- `printed.py`: printed lines (LeRobot's, any trainer's) read by a preset's patterns.
- `registry.py`: every format one record (`Format`: its decoder, how a folder is told to hold
  it, its files, how it is followed, how its end is known), all in one table (`FORMATS`).
- `where.py`: each kind's detection and the files it reads in a folder (named by its record).
- `spec.py`: a preset's `[source]` as read (`SourceSpec`).
- `source.py`: reading a preset's `[source]`, and its decoder.
- `locate.py`: the kind of log a folder holds, and the files a `[source]` reads there.
- `cold.py`: the cold read of a whole run into a store.
"""
