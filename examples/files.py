"""List the regular files of a directory: complete the loop body with infill."""
import os


def list_files(path):
    """Return the names of the regular files in path."""
    result = []
    for name in os.listdir(path):
        
    return result


if __name__ == "__main__":
    print(list_files("."))
