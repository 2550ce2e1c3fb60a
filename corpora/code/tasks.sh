#!/usr/bin/env bash
# Four small tasks, written the same way in every language of this folder.
set -euo pipefail

TEXT="The baker knows the neighbours, and the neighbours know the baker."

ORDERS="anna,bread,2,3.50
ben,coffee,1,4.20
anna,cake,1,2.80
chen,bread,3,3.50
ben,croissant,4,1.90"

# Count lower-cased words and return the most frequent ones.
word_counts() {
  local top="${2:-3}"
  printf '%s\n' "$1" | tr '[:upper:]' '[:lower:]' | tr -cs 'a-z' '\n' | grep -v '^$' |
    sort | uniq -c | sort -k1,1nr -k2,2 | head -n "$top" | awk '{ print $2 ": " $1 }'
}

# True when the letters read the same backwards.
is_palindrome() {
  local letters
  letters="$(printf '%s' "$1" | tr '[:upper:]' '[:lower:]' | tr -cd 'a-z0-9')"
  if [[ "$letters" == "$(printf '%s' "$letters" | rev)" ]]; then echo true; else echo false; fi
}

# Celsius to Fahrenheit, one row per step.
fahrenheit_table() {
  local c
  for c in $(seq "$1" "$3" "$2"); do
    awk -v c="$c" 'BEGIN { printf "%4d C = %6.1f F\n", c, c * 9 / 5 + 32 }'
  done
}

# Sum quantity * price per customer, largest total first.
totals_per_customer() {
  awk -F, '{ total[$1] += $3 * $4 } END { for (c in total) printf "%-6s %8.2f\n", c, total[c] }' |
    sort -k2,2nr
}

word_counts "$TEXT" 3
for candidate in "Never odd or even" "solar panel"; do
  echo "'$candidate' is a palindrome: $(is_palindrome "$candidate")"
done
fahrenheit_table -10 30 10
printf '%s\n' "$ORDERS" | totals_per_customer
