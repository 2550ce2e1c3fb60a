// Four small tasks, written the same way in every language of this folder.
package main

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

const text = "The baker knows the neighbours, and the neighbours know the baker."

type order struct {
	customer string
	product  string
	quantity int
	price    float64
}

var orders = []order{
	{"anna", "bread", 2, 3.50},
	{"ben", "coffee", 1, 4.20},
	{"anna", "cake", 1, 2.80},
	{"chen", "bread", 3, 3.50},
	{"ben", "croissant", 4, 1.90},
}

type pair struct {
	key   string
	value float64
}

// wordCounts counts lower-cased words and returns the most frequent ones.
func wordCounts(text string, top int) []pair {
	counts := map[string]float64{}
	for _, word := range regexp.MustCompile(`[a-z]+`).FindAllString(strings.ToLower(text), -1) {
		counts[word]++
	}
	pairs := make([]pair, 0, len(counts))
	for word, count := range counts {
		pairs = append(pairs, pair{word, count})
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].value > pairs[j].value })
	if len(pairs) > top {
		pairs = pairs[:top]
	}
	return pairs
}

// isPalindrome is true when the letters read the same backwards.
func isPalindrome(text string) bool {
	letters := regexp.MustCompile(`[^a-z0-9]`).ReplaceAllString(strings.ToLower(text), "")
	for i, j := 0, len(letters)-1; i < j; i, j = i+1, j-1 {
		if letters[i] != letters[j] {
			return false
		}
	}
	return true
}

// fahrenheitTable converts Celsius to Fahrenheit, one row per step.
func fahrenheitTable(start, stop, step int) [][2]float64 {
	var rows [][2]float64
	for c := start; c <= stop; c += step {
		rows = append(rows, [2]float64{float64(c), float64(c)*9/5 + 32})
	}
	return rows
}

// totalsPerCustomer sums quantity * price per customer, largest total first.
func totalsPerCustomer(orders []order) []pair {
	totals := map[string]float64{}
	for _, o := range orders {
		totals[o.customer] += float64(o.quantity) * o.price
	}
	pairs := make([]pair, 0, len(totals))
	for customer, total := range totals {
		pairs = append(pairs, pair{customer, total})
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].value > pairs[j].value })
	return pairs
}

func main() {
	for _, p := range wordCounts(text, 3) {
		fmt.Printf("%s: %d\n", p.key, int(p.value))
	}
	for _, candidate := range []string{"Never odd or even", "solar panel"} {
		fmt.Printf("'%s' is a palindrome: %t\n", candidate, isPalindrome(candidate))
	}
	for _, row := range fahrenheitTable(-10, 30, 10) {
		fmt.Printf("%4d C = %6.1f F\n", int(row[0]), row[1])
	}
	for _, p := range totalsPerCustomer(orders) {
		fmt.Printf("%-6s %8.2f\n", p.key, p.value)
	}
}
