"""Four small tasks, written the same way in every language of this folder."""

import re
from collections import Counter

TEXT = "The baker knows the neighbours, and the neighbours know the baker."

ORDERS = [
    ("anna", "bread", 2, 3.50),
    ("ben", "coffee", 1, 4.20),
    ("anna", "cake", 1, 2.80),
    ("chen", "bread", 3, 3.50),
    ("ben", "croissant", 4, 1.90),
]


def word_counts(text: str, top: int = 3) -> list[tuple[str, int]]:
    """Count lower-cased words and return the most frequent ones."""
    words = re.findall(r"[a-z]+", text.lower())
    return Counter(words).most_common(top)


def is_palindrome(text: str) -> bool:
    """True when the letters read the same backwards."""
    letters = [c for c in text.lower() if c.isalnum()]
    return letters == letters[::-1]


def fahrenheit_table(start: int, stop: int, step: int) -> list[tuple[int, float]]:
    """Celsius to Fahrenheit, one row per step."""
    return [(c, c * 9 / 5 + 32) for c in range(start, stop + 1, step)]


def totals_per_customer(orders: list[tuple[str, str, int, float]]) -> list[tuple[str, float]]:
    """Sum quantity * price per customer, largest total first."""
    totals: dict[str, float] = {}
    for customer, _product, quantity, price in orders:
        totals[customer] = totals.get(customer, 0.0) + quantity * price
    return sorted(totals.items(), key=lambda item: item[1], reverse=True)


def main() -> None:
    for word, count in word_counts(TEXT):
        print(f"{word}: {count}")
    for candidate in ["Never odd or even", "solar panel"]:
        print(f"{candidate!r} is a palindrome: {is_palindrome(candidate)}")
    for celsius, fahrenheit in fahrenheit_table(-10, 30, 10):
        print(f"{celsius:>4} C = {fahrenheit:6.1f} F")
    for customer, total in totals_per_customer(ORDERS):
        print(f"{customer:<6} {total:8.2f}")


if __name__ == "__main__":
    main()
