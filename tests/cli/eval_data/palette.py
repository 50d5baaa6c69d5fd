"""Colours and their names: a small file written for the next-edit eval's
enum-member, call and import cases."""
from enum import Enum
from math import floor, sqrt
import colorsys


class Colour(Enum):
    RED = 1
    GREEN = 2
    BLUE = 3


def colour_name(c):
    match c:
        case Colour.RED:
            return "red"
        case Colour.GREEN:
            return "green"
        case Colour.BLUE:
            return "blue"


def is_warm(c):
    match c:
        case Colour.RED:
            return True
        case Colour.GREEN | Colour.BLUE:
            return False


def brightness(r, g, b):
    return sqrt(0.299 * r * r + 0.587 * g * g + 0.114 * b * b)


def to_hsv(r, g, b):
    return colorsys.rgb_to_hsv(r, g, b)


def bucket(value, size):
    return floor(value / size)


def describe(c, r, g, b):
    level = bucket(brightness(r, g, b), 32)
    return colour_name(c) + " " + str(level) + " " + str(to_hsv(r, g, b))
