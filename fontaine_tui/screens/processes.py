"""Processes mode: the run's process tree, refreshed; a signal to one, or its stacks.

The tree is looked at in a thread every REFRESH_S while the mode is shown. A signal goes
only to a run this console launched (model/processes.py), after a dialog and a confirmation.
"""

from __future__ import annotations

import asyncio

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from fontaine_tui.core.host.proctree import Member, ProcTree, TreeLook
from fontaine_tui.model.processes import (
    COLUMNS,
    Scope,
    look,
    row,
    scope_of,
    signal_member,
    stacks,
    title,
)
from fontaine_tui.screens.base import ConsoleScreen
from fontaine_tui.screens.signal_dialog import SignalDialog
from fontaine_tui.widgets.keys_footer import KeysFooter
from fontaine_tui.widgets.process_table import ProcessTable, StackPane
from fontaine_tui.widgets.safe import assemble, notify

REFRESH_S = 2.0
FIRST_CPU_S = 0.5


class ProcessesScreen(ConsoleScreen):
    TITLE = "processes"
    BINDINGS = [
        Binding(
            "k",
            "screen.signal",
            "Signal",
            id="processes.signal",
            tooltip="Send SIGTERM, SIGINT, SIGKILL or SIGUSR1 to the selected process "
            "(a run this console launched; asks to confirm)",
        ),
        Binding(
            "d",
            "screen.stack",
            "Stack dump",
            id="processes.stack",
            tooltip="The selected process's Python stacks (py-spy dump)",
        ),
        Binding(
            "x",
            "screen.close_stack",
            "Close stacks",
            id="processes.close",
            show=False,
            tooltip="Hide the stack pane",
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.looker = TreeLook()
        self.proc_tree: ProcTree | None = None
        self.proc_scope: Scope | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="processes-title")
        yield ProcessTable(id="processes-table", cursor_type="row", zebra_stripes=True)
        yield StackPane(id="stack-pane")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.set_interval(REFRESH_S, self._again)

    def on_screen_resume(self) -> None:
        if not self.is_current:  # composed ahead (app._warm_modes): nothing to look at yet
            return
        self.refresh_tree()
        self.set_timer(FIRST_CPU_S, self._again)  # CPU % needs two looks: the second soon

    def _again(self) -> None:
        if self.is_current:
            self.refresh_tree()

    @work(exclusive=True, group="processes")
    async def refresh_tree(self) -> None:
        scope = scope_of(self.console.session)
        tree = await asyncio.to_thread(look, scope, self.looker)
        self.show(scope, tree)

    def show(self, scope: Scope, tree: ProcTree | None) -> None:
        """Draw one look at the tree (or the line saying why there is none)."""
        self.proc_scope, self.proc_tree = scope, tree
        self.query_one("#processes-title", Static).update(
            assemble(("processes: ", "$text-muted"), (title(scope, tree), "bold"))
        )
        table = self.query_one(ProcessTable)
        table.display = tree is not None and bool(tree.members)
        if tree is not None:
            gpu_known = not tree.gpu_reason.startswith("no GPU")
            table.show(COLUMNS, [row(m, gpu_known) for m in tree.members])

    def selected(self) -> Member | None:
        pid = self.query_one(ProcessTable).selected_pid()
        return None if pid is None or self.proc_tree is None else self.proc_tree.member(pid)

    def action_signal(self) -> None:
        scope, member = self.proc_scope, self.selected()
        if scope is None or member is None:
            notify(self.app, "no process selected", severity="warning", timeout=3)
            return
        if not scope.ours:
            notify(self.app, f"not sent: {scope.note}", severity="warning", timeout=6)
            return

        def done(name: str | None) -> None:
            if name is not None:
                outcome = signal_member(scope, member, name)
                notify(self.app, outcome.message, severity=outcome.severity, timeout=8)
                self.refresh_tree()

        self.app.push_screen(SignalDialog(member.pid, member.role or member.name), done)

    def action_stack(self) -> None:
        member = self.selected()
        if member is None:
            notify(self.app, "no process selected", severity="warning", timeout=3)
            return
        self.query_one(StackPane).show(f"py-spy dump --pid {member.pid}", "dumping…")
        self.stack_of(member)

    @work(exclusive=True, group="stack")
    async def stack_of(self, member: Member) -> None:
        if self.proc_tree is None:
            return
        got = await asyncio.to_thread(stacks, self.proc_tree, member)
        self.query_one(StackPane).show(f"py-spy dump --pid {got.pid}", got.text, got.error)

    def action_close_stack(self) -> None:
        self.query_one(StackPane).display = False
