"""``python -m smmpi.cli``."""

from smmpi.cli import main

if __name__ == "__main__":
    main()
