"""The metric browser's grid: one page of small charts, the selected one outlined.

Only a page's charts exist as widgets (cols x rows of them, as many as the grid's size holds),
so a run with hundreds of fields draws no more than a page. Each cell is a `Chart`, which
downsamples to its own width and replots at most once per its interval.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual import events
from textual.containers import Container
from textual.message import Message

from fontaine_tui.core.charts.chart import ChartSpec
from fontaine_tui.widgets.chart import Chart

CELL_WIDTH = 38  # the narrowest cell that still shows a curve and its axis
CELL_HEIGHT = 10


class MetricCell(Chart):
    """One field's small chart; a click on it picks it."""

    DEFAULT_CSS = """
    MetricCell { height: 1fr; min-height: 6; border: round $panel; }
    MetricCell.-selected { border: heavy $accent; }
    """

    def __init__(self, slot: int, min_interval: float) -> None:
        super().__init__(classes="metric-cell", min_interval=min_interval)
        self.slot = slot  # its place on the page

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.post_message(MetricGrid.Picked(self.slot))


class MetricGrid(Container):
    """A page of `MetricCell`s laid out as a grid that fits the widget's size."""

    DEFAULT_CSS = """
    MetricGrid { layout: grid; height: 1fr; }
    """

    class Picked(Message):
        """A cell was clicked: the field in `slot` of the page is to open full size."""

        def __init__(self, slot: int) -> None:
            super().__init__()
            self.slot = slot

    class Reshaped(Message):
        """The grid's size holds another number of cells: its page is to be drawn again."""

    def __init__(self, *, id: str | None = None, min_interval: float = 1.0) -> None:
        super().__init__(id=id)
        self.min_interval = min_interval
        self.shape = (0, 0)  # (cols, rows) of the cells mounted

    def fit(self) -> tuple[int, int]:
        """The (cols, rows) this size holds, at least one of each."""
        return (
            max(1, self.size.width // CELL_WIDTH),
            max(1, self.size.height // CELL_HEIGHT),
        )

    @property
    def per_page(self) -> int:
        return self.shape[0] * self.shape[1]

    def reshape(self) -> bool:
        """Mount as many cells as the size holds; True when the shape changed."""
        shape = self.fit()
        if shape == self.shape:
            return False
        self.shape = shape
        self.styles.grid_size_columns, self.styles.grid_size_rows = shape
        self.query(MetricCell).remove()
        self.mount_all([MetricCell(i, self.min_interval) for i in range(shape[0] * shape[1])])
        return True

    def on_resize(self) -> None:
        if self.size.area and self.reshape():
            self.post_message(MetricGrid.Reshaped())

    def show(self, page: Sequence[tuple[ChartSpec, object]], selected: int) -> None:
        """Draw the page's specs (each with its key), the `selected` slot outlined.

        Cells past the page's fields are hidden."""
        for cell in self.query(MetricCell):
            if cell.slot < len(page):
                cell.display = True
                spec, key = page[cell.slot]
                cell.show(spec, key=key)
                cell.set_class(cell.slot == selected, "-selected")
            else:
                cell.display = False
                cell.set_class(False, "-selected")
