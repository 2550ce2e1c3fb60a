/* Four small tasks, written the same way in every language of this folder. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *TEXT = "The baker knows the neighbours, and the neighbours know the baker.";

struct order {
    const char *customer;
    const char *product;
    int quantity;
    double price;
};

static const struct order ORDERS[] = {
    {"anna", "bread", 2, 3.50},
    {"ben", "coffee", 1, 4.20},
    {"anna", "cake", 1, 2.80},
    {"chen", "bread", 3, 3.50},
    {"ben", "croissant", 4, 1.90},
};

#define MAX_KEYS 64
#define MAX_WORD 32

struct entry {
    char key[MAX_WORD];
    double value;
};

static int by_value_desc(const void *a, const void *b) {
    double x = ((const struct entry *)a)->value, y = ((const struct entry *)b)->value;
    return (x < y) - (x > y);
}

/* Add value to key, creating the entry if needed; returns the number of entries. */
static size_t add(struct entry *entries, size_t n, const char *key, double value) {
    for (size_t i = 0; i < n; i++) {
        if (strcmp(entries[i].key, key) == 0) {
            entries[i].value += value;
            return n;
        }
    }
    snprintf(entries[n].key, MAX_WORD, "%s", key);
    entries[n].value = value;
    return n + 1;
}

/* Count lower-cased words; the caller prints the most frequent ones. */
static size_t word_counts(const char *text, struct entry *entries) {
    size_t n = 0, len = 0;
    char word[MAX_WORD];
    for (const char *p = text;; p++) {
        if (isalpha((unsigned char)*p) && len < MAX_WORD - 1) {
            word[len++] = (char)tolower((unsigned char)*p);
        } else if (len > 0) {
            word[len] = '\0';
            n = add(entries, n, word, 1.0);
            len = 0;
        }
        if (*p == '\0') break;
    }
    qsort(entries, n, sizeof entries[0], by_value_desc);
    return n;
}

/* True when the letters read the same backwards. */
static bool is_palindrome(const char *text) {
    char letters[256];
    size_t len = 0;
    for (const char *p = text; *p && len < sizeof letters; p++) {
        if (isalnum((unsigned char)*p)) letters[len++] = (char)tolower((unsigned char)*p);
    }
    for (size_t i = 0; i < len / 2; i++) {
        if (letters[i] != letters[len - 1 - i]) return false;
    }
    return true;
}

/* Celsius to Fahrenheit. */
static double fahrenheit(int celsius) { return celsius * 9.0 / 5.0 + 32.0; }

/* Sum quantity * price per customer, largest total first. */
static size_t totals_per_customer(const struct order *orders, size_t count, struct entry *entries) {
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        n = add(entries, n, orders[i].customer, orders[i].quantity * orders[i].price);
    }
    qsort(entries, n, sizeof entries[0], by_value_desc);
    return n;
}

int main(void) {
    struct entry entries[MAX_KEYS];
    size_t n = word_counts(TEXT, entries);
    for (size_t i = 0; i < n && i < 3; i++) printf("%s: %d\n", entries[i].key, (int)entries[i].value);
    const char *candidates[] = {"Never odd or even", "solar panel"};
    for (size_t i = 0; i < 2; i++) {
        printf("'%s' is a palindrome: %s\n", candidates[i], is_palindrome(candidates[i]) ? "true" : "false");
    }
    for (int c = -10; c <= 30; c += 10) printf("%4d C = %6.1f F\n", c, fahrenheit(c));
    n = totals_per_customer(ORDERS, sizeof ORDERS / sizeof ORDERS[0], entries);
    for (size_t i = 0; i < n; i++) printf("%-6s %8.2f\n", entries[i].key, entries[i].value);
    return 0;
}
