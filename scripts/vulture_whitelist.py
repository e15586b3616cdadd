"""Names vulture reports as unused that are used, each group with the reason.

vulture reads this file beside fontaine_tui/ and engine/ (tests/test_architecture.py,
.pre-commit-config.yaml): a name written here counts as used. Nothing imports or runs it.
Add a name only with the reason it is used; delete what nothing uses instead.

    vulture fontaine_tui engine scripts/vulture_whitelist.py --min-confidence 60
"""

from __future__ import annotations


class _Used:
    def __getattr__(self, _name: str) -> _Used:
        return self


_ = _Used()

# Textual reads these class attributes and calls these hooks by name: CSS_PATH, TITLE,
# DEFAULT_CSS, compose, on_<event> handlers, watch_<reactive>, check_action and
# border_title and border_subtitle (drawn on the widget's border)
_.CSS_PATH
_.TITLE
_.DEFAULT_CSS
_.compose
_.on_unmount
_.on_resize
_.on_worker_state_changed
_.on_input_submitted
_.on_button_pressed
_.on_data_table_row_selected
_.watch_view
_.check_action
_.border_title
_.border_subtitle

# Textual calls action_<name> for a binding's action string (BINDINGS, "app.<name>")
_.action_toggle_scale
_.action_step_read
_.action_live_read
_.action_note
_.action_unblind
_.action_export
_.action_rescore
_.action_help
_.action_quit
_.action_cancel
_.action_choose
_.action_dismiss_help
_.action_smoothing
_.action_add_run
_.action_legend
_.action_toggle_log
_.action_toggle_datasets
_.action_signal
_.action_stack
_.action_close_stack
_.action_pin
_.action_filter
_.action_back
_.action_move
_.action_chart_cursor
_.action_chart_move
_.action_chart_off
_.action_wall_time

# Textual calls the handlers its @on decorator registers, and reads these widget attributes
# and style setters when they are set (screens/metrics.py, widgets/metric_grid.py)
_.on_click
_._typed
_._kept
_._picked
_._reshaped
_.disabled
_.grid_size_columns
_.grid_size_rows

# argparse reads a subparsers action's `required` (a subcommand must be given)
_.required

# urllib's opener calls these handler methods by name, with these arguments
_.redirect_request
_.fp
_.newurl
_.http_open
_.https_open

# torch and PyAV read these attributes when they are set: TF32 matmuls and convolutions
# (engine/accel.py), the decoder's threading (engine/videos.py)
_.allow_tf32
_.thread_type

# a type imported for typing.cast's string form only (engine/lerobot_writer.py)
_.VideoStream

# record fields read through dataclasses.asdict / fields or getattr by key: verdict.json
# (AmendmentCheck, Scale), babysit.toml (registry Entry, EntryChanges), [slurm] keys
# (SlurmSettings), and a train record's columns filled by position (TrainPoint)
_.first_affected_step
_.numerator
_.denominator
_.poll_cadence_s
_.updated_at
_.account
_.qos
_.constraint
_.cpus_per_task
_.gres
_.samples

# TypedDict keys of the preset's [recipe] and [platform] sections: read by key string
_.node_rank
_.rdzv_endpoint
_.rdzv_id

# read by the tests and the bench: the corpus's episode of each frame
# (tests/engine/test_corpus.py), a comparator's train level from the bank
# (tests/core/verdict/test_banked.py), the redraw timer (tests/console/test_batching.py), the
# SSH master's pid (tests/core/follow/test_ssh.py), the characters literal_block escapes
# (tests/console/test_hostile_text.py), a batch's end offset
# (tests/core/follow/test_local_faults.py, bench/cold_read.py), the review chain's check
# with the line it breaks at (tests/core/verdict/test_chain_head.py)
_.verify
_.episode
_.train_level
_.frame_pending
_.master_pid
_.unsafe
_.end_offset

# the CRC-32C implementation in use, printed by bench/tb_cold_read.py
_.CRC_IMPLEMENTATION

# transformers reads a config's _attn_implementation when it builds attention (engine/model.py)
_._attn_implementation

# the backbone's parameters, read by tests/engine/test_insulation.py
_.backbone_parameters

# a sealed bundle's zip entry fields, read by zipfile when it writes the entry (bundle.py)
_.create_system
_.external_attr
_.compress_type

# core/limits.py's table of bounds: read by tests/core/test_limits.py, which holds it to
# docs/limits.md's table (each limit's name and the hostile input that tests it)
_.LIMITS
_.hostile

# bench/responsiveness.py waits for every mode to be composed before it times keys
_.modes_warm

# a store's snapshot over SSH: the transport's method its format record names (registry.py's
# Store.via), called by that name in core/follow/foreign.py
_.mlflow_snapshot

# widgets/chart.py counts the figures a chart builds: tests/console/test_metrics_browser.py
# holds that a key paints a chart built off screen without building it again
_.builds
