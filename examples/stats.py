"""Small statistics helpers: complete the body of stdev() with infill."""
import math


def mean(values):
    """Return the arithmetic mean of values."""
    return sum(values) / len(values)


def stdev(values):
    """Return the population standard deviation of values."""
    m = mean(values)
    


if __name__ == "__main__":
    data = [2, 4, 4, 4, 5, 5, 7, 9]
    print(mean(data), stdev(data))
