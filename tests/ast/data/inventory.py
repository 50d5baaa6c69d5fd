"""Inventory bookkeeping for a small warehouse.

Written for infill's tests (tests/ast): a realistic module of a few hundred
lines with imports, dataclasses, classes, methods and free functions, used to
check that AST slicing keeps what a plain line window drops.
"""
from __future__ import annotations

import csv
import json
import logging
import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

log = logging.getLogger(__name__)

DEFAULT_REORDER_DAYS = 14
SAFETY_FACTOR = 1.65


class InventoryError(Exception):
    """Raised when a stock operation would leave the books inconsistent."""


@dataclass(frozen=True)
class Sku:
    code: str
    name: str
    unit_cost: float
    unit: str = "each"

    def label(self) -> str:
        return f"{self.code} {self.name} ({self.unit})"


@dataclass
class StockLine:
    sku: Sku
    on_hand: int = 0
    reserved: int = 0
    history: List[Tuple[date, int]] = field(default_factory=list)

    @property
    def available(self) -> int:
        return self.on_hand - self.reserved

    def record(self, day: date, delta: int) -> None:
        self.history.append((day, delta))
        self.on_hand += delta
        if self.on_hand < 0:
            raise InventoryError(f"{self.sku.code}: stock would go negative")


@dataclass
class Movement:
    day: date
    code: str
    delta: int
    reason: str = ""


def parse_date(text: str) -> date:
    year, month, day = (int(part) for part in text.split("-"))
    return date(year, month, day)


def read_movements(path: Path) -> Iterator[Movement]:
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        for row in reader:
            yield Movement(
                day=parse_date(row["date"]),
                code=row["sku"].strip().upper(),
                delta=int(row["delta"]),
                reason=row.get("reason", ""),
            )


def daily_demand(history: Iterable[Tuple[date, int]]) -> Dict[date, int]:
    demand: Dict[date, int] = defaultdict(int)
    for day, delta in history:
        if delta < 0:
            demand[day] += -delta
    return dict(demand)


def mean_and_deviation(values: List[float]) -> Tuple[float, float]:
    if not values:
        return 0.0, 0.0
    mean = sum(values) / len(values)
    variance = sum((v - mean) ** 2 for v in values) / len(values)
    return mean, math.sqrt(variance)


class Warehouse:
    """All stock lines of one site, with reservations and reorder advice."""

    def __init__(self, name: str, reorder_days: int = DEFAULT_REORDER_DAYS) -> None:
        self.name = name
        self.reorder_days = reorder_days
        self.lines: Dict[str, StockLine] = {}
        self.catalog: Dict[str, Sku] = {}

    def add_sku(self, sku: Sku) -> None:
        if sku.code in self.catalog:
            raise InventoryError(f"duplicate SKU {sku.code}")
        self.catalog[sku.code] = sku
        self.lines[sku.code] = StockLine(sku)

    def line(self, code: str) -> StockLine:
        try:
            return self.lines[code]
        except KeyError:
            raise InventoryError(f"unknown SKU {code}") from None

    def apply(self, movement: Movement) -> None:
        line = self.line(movement.code)
        line.record(movement.day, movement.delta)
        log.debug("%s %+d %s", movement.code, movement.delta, movement.reason)

    def apply_all(self, movements: Iterable[Movement]) -> int:
        count = 0
        for movement in movements:
            self.apply(movement)
            count += 1
        return count

    def reserve(self, code: str, quantity: int) -> bool:
        line = self.line(code)
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        if line.available < quantity:
            return False
        line.reserved += quantity
        return True

    def release(self, code: str, quantity: int) -> None:
        line = self.line(code)
        line.reserved = max(0, line.reserved - quantity)

    def value(self) -> float:
        return sum(l.on_hand * l.sku.unit_cost for l in self.lines.values())

    def reorder_point(self, code: str, lead_days: int) -> int:
        line = self.line(code)
        demand = daily_demand(line.history)
        values = [float(v) for v in demand.values()]
        mean, deviation = mean_and_deviation(values)
        safety = SAFETY_FACTOR * deviation * math.sqrt(lead_days)
        return int(math.ceil(mean * lead_days + safety))

    def advice(self, lead_days: int = 5) -> List[Tuple[str, int]]:
        result = []
        for code, line in sorted(self.lines.items()):
            point = self.reorder_point(code, lead_days)
            if line.available <= point:
                result.append((code, point - line.available + self.reorder_days))
        return result

    def snapshot(self) -> Dict[str, Dict[str, int]]:
        return {
            code: {"on_hand": line.on_hand, "reserved": line.reserved}
            for code, line in self.lines.items()
        }


class Ledger:
    """An append-only log of movements that can rebuild a warehouse."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: List[Movement] = []

    def append(self, movement: Movement) -> None:
        self.entries.append(movement)

    def save(self) -> None:
        rows = [
            {"date": m.day.isoformat(), "sku": m.code, "delta": m.delta, "reason": m.reason}
            for m in self.entries
        ]
        self.path.write_text(json.dumps(rows, indent=2))

    def load(self) -> None:
        if not self.path.exists():
            self.entries = []
            return
        rows = json.loads(self.path.read_text())
        self.entries = [
            Movement(parse_date(r["date"]), r["sku"], int(r["delta"]), r.get("reason", ""))
            for r in rows
        ]

    def rebuild(self, warehouse: Warehouse) -> Warehouse:
        for movement in sorted(self.entries, key=lambda m: m.day):
            warehouse.apply(movement)
        return warehouse

    def between(self, start: date, end: date) -> List[Movement]:
        return [m for m in self.entries if start <= m.day <= end]


def weekly_totals(ledger: Ledger, code: str, weeks: int, today: date) -> List[int]:
    totals = []
    for week in range(weeks):
        end = today - timedelta(days=7 * week)
        start = end - timedelta(days=6)
        moved = sum(-m.delta for m in ledger.between(start, end) if m.code == code and m.delta < 0)
        totals.append(moved)
    totals.reverse()
    return totals


def slow_movers(warehouse: Warehouse, ledger: Ledger, today: date, weeks: int = 8) -> List[str]:
    result = []
    for code, line in warehouse.lines.items():
        totals = weekly_totals(ledger, code, weeks, today)
        if line.on_hand > 0 and sum(totals) < weeks:
            result.append(code)
    return sorted(result)


def load_catalog(path: Path) -> List[Sku]:
    skus = []
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            skus.append(Sku(row["code"], row["name"], float(row["cost"]), row.get("unit", "each")))
    return skus


def summarize(warehouse: Warehouse, ledger: Ledger, today: Optional[date] = None) -> str:
    today = today or date.today()
    lines = [f"Warehouse {warehouse.name}: value {warehouse.value():.2f}"]
    for code, quantity in warehouse.advice():
        sku = warehouse.catalog[code]
        lines.append(f"  reorder {quantity:>5} x {sku.label()}")
    slow = slow_movers(warehouse, ledger, today)
    if slow:
        lines.append("  slow movers: " + ", ".join(slow))
    return "\n".join(lines)


def transfer(source: Warehouse, target: Warehouse, code: str, quantity: int, day: date) -> None:
    if quantity <= 0:
        raise ValueError("quantity must be positive")
    line = source.line(code)
    if line.available < quantity:
        raise InventoryError(f"{code}: only {line.available} available at {source.name}")
    if code not in target.catalog:
        target.add_sku(source.catalog[code])
    source.apply(Movement(day, code, -quantity, f"transfer to {target.name}"))
    target.apply(Movement(day, code, quantity, f"transfer from {source.name}"))


def audit(warehouse: Warehouse, counted: Dict[str, int], day: date) -> List[Movement]:
    corrections = []
    for code, quantity in counted.items():
        line = warehouse.line(code)
        difference = quantity - line.on_hand
        if difference:
            movement = Movement(day, code, difference, "audit correction")
            warehouse.apply(movement)
            corrections.append(movement)
    return corrections


def fill_rate(orders: List[Tuple[str, int]], warehouse: Warehouse) -> float:
    if not orders:
        return 1.0
    filled = 0
    for code, quantity in orders:
        if warehouse.reserve(code, quantity):
            filled += 1
    return filled / len(orders)


def export_snapshot(warehouse: Warehouse, path: Path) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["code", "name", "on_hand", "reserved", "value"])
        for code, line in sorted(warehouse.lines.items()):
            writer.writerow([
                code,
                line.sku.name,
                line.on_hand,
                line.reserved,
                f"{line.on_hand * line.sku.unit_cost:.2f}",
            ])


def main(argv: Optional[List[str]] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("catalog", type=Path)
    parser.add_argument("movements", type=Path)
    parser.add_argument("--ledger", type=Path, default=Path("ledger.json"))
    parser.add_argument("--lead-days", type=int, default=5)
    args = parser.parse_args(argv)

    warehouse = Warehouse("main")
    for sku in load_catalog(args.catalog):
        warehouse.add_sku(sku)
    ledger = Ledger(args.ledger)
    ledger.load()
    ledger.rebuild(warehouse)
    for movement in read_movements(args.movements):
        warehouse.apply(movement)
        ledger.append(movement)
    ledger.save()
    print(summarize(warehouse, ledger))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
