"""Per-GPU util, memory and power, host RAM, engine RSS/CPU and the data-wait fraction."""

from __future__ import annotations

from fontaine_tui.core.host.telemetry import TelemetrySnapshot
from fontaine_tui.core.text import gib
from fontaine_tui.widgets.quiet import QuietStatic
from fontaine_tui.widgets.safe import assemble


def _pct(x: float | None, places: int = 0) -> str:
    return "—" if x is None else f"{x:.{places}f}%"


class TelemetryPanel(QuietStatic):
    DEFAULT_CSS = """
    TelemetryPanel { height: auto; min-height: 5; border: round $panel; padding: 0 1;
                     border-title-color: $text-muted; }
    """

    def on_mount(self) -> None:
        self.border_title = "telemetry"

    def show(
        self,
        snap: TelemetrySnapshot | None,
        data_frac: float | None,
        starved: bool = False,
        reason: str = "",
    ) -> None:
        """Show a telemetry snapshot and the data-wait fraction.

        `snap` is None when there is none, with `reason` saying why. `starved` means the data
        wait is over the preset's gate (decided by the model, as the starvation rule
        decides).
        """
        parts: list[tuple[str, str] | str] = []
        wait = "—" if data_frac is None else f"{data_frac * 100:.1f}%"
        style = "$error" if starved else ""
        if snap is None:
            parts += [(f"no telemetry ({reason or 'none for this source'})", "$text-muted"), "\n"]
        else:
            gpus = snap.gpus
            if gpus:
                for g in gpus:
                    used, total = gib(g.mem_used, unit=False), gib(g.mem_total, unit=False)
                    power = "—" if g.power_w is None else f"{g.power_w:.0f} W"
                    parts.append(
                        f"GPU{g.index} {g.name[:20]}  util {_pct(g.util_pct)}  "
                        f"mem {used}/{total} GiB  {power}  {g.uuid[:12]}\n"
                    )
            else:
                parts += [(snap.gpu_status or "no GPU telemetry", "$text-muted"), "\n"]
            ram = snap.ram
            if ram is not None:
                used = gib(ram.total - ram.available, unit=False)
                parts.append(
                    f"host RAM {used}/{gib(ram.total, unit=False)} GiB used "
                    f"({gib(ram.available, unit=False)} GiB free, {ram.source})\n"
                )
            else:
                parts += [(f"host RAM unknown ({snap.ram_reason})", "$text-muted"), "\n"]
            proc = snap.process
            if proc is not None:
                parts.append(
                    f"engine pid {proc.pid}: RSS {gib(proc.rss, unit=False)} GiB, "
                    f"CPU {_pct(proc.cpu_pct)} ({proc.processes} processes)\n"
                )
            else:
                parts += [(f"engine: {snap.process_reason}", "$text-muted"), "\n"]
        parts += ["data-wait fraction ", (wait, style)]
        self.show_content(assemble(*parts))
