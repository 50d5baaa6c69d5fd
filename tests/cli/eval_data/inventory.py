"""Stock of a small shop: a file written for the eval harness's tests (it
imports shapes.py and palette.py, for the cases that cross files)."""
from dataclasses import dataclass

from shapes import Point, perimeter
import palette


@dataclass
class Item:
    name: str
    price: float
    qty: int


@dataclass
class Shelf:
    label: str
    corner: Point
    width: float


def default_items():
    return [
        Item(name="bolt", price=0.1, qty=500),
        Item(name="nut", price=0.05, qty=800),
        Item("washer", 0.02, 1000),
    ]


def shelf_of(label, x, y):
    return Shelf(label=label, corner=Point(x, y), width=1.2)


def value(items):
    total = 0.0
    for it in items:
        total += it.price * it.qty
    return total


def fence(points):
    return perimeter(points) * 1.1


def tint(r, g, b):
    return palette.brightness(r, g, b)


def cheapest(items):
    return min(items, key=lambda it: it.price)
