// Four small tasks, written the same way in every language of this folder.
use std::collections::HashMap;

const TEXT: &str = "The baker knows the neighbours, and the neighbours know the baker.";

struct Order {
    customer: &'static str,
    product: &'static str,
    quantity: u32,
    price: f64,
}

const ORDERS: [Order; 5] = [
    Order { customer: "anna", product: "bread", quantity: 2, price: 3.50 },
    Order { customer: "ben", product: "coffee", quantity: 1, price: 4.20 },
    Order { customer: "anna", product: "cake", quantity: 1, price: 2.80 },
    Order { customer: "chen", product: "bread", quantity: 3, price: 3.50 },
    Order { customer: "ben", product: "croissant", quantity: 4, price: 1.90 },
];

/// Count lower-cased words and return the most frequent ones.
fn word_counts(text: &str, top: usize) -> Vec<(String, usize)> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    let lower = text.to_lowercase();
    for word in lower.split(|c: char| !c.is_ascii_lowercase()).filter(|w| !w.is_empty()) {
        *counts.entry(word.to_string()).or_insert(0) += 1;
    }
    let mut pairs: Vec<(String, usize)> = counts.into_iter().collect();
    pairs.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    pairs.truncate(top);
    pairs
}

/// True when the letters read the same backwards.
fn is_palindrome(text: &str) -> bool {
    let letters: Vec<char> = text
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric())
        .collect();
    letters.iter().eq(letters.iter().rev())
}

/// Celsius to Fahrenheit, one row per step.
fn fahrenheit_table(start: i32, stop: i32, step: usize) -> Vec<(i32, f64)> {
    (start..=stop)
        .step_by(step)
        .map(|c| (c, f64::from(c) * 9.0 / 5.0 + 32.0))
        .collect()
}

/// Sum quantity * price per customer, largest total first.
fn totals_per_customer(orders: &[Order]) -> Vec<(&'static str, f64)> {
    let mut totals: HashMap<&'static str, f64> = HashMap::new();
    for order in orders {
        let _ = order.product;
        *totals.entry(order.customer).or_insert(0.0) += f64::from(order.quantity) * order.price;
    }
    let mut pairs: Vec<(&'static str, f64)> = totals.into_iter().collect();
    pairs.sort_by(|a, b| b.1.total_cmp(&a.1));
    pairs
}

fn main() {
    for (word, count) in word_counts(TEXT, 3) {
        println!("{word}: {count}");
    }
    for candidate in ["Never odd or even", "solar panel"] {
        println!("'{candidate}' is a palindrome: {}", is_palindrome(candidate));
    }
    for (celsius, fahrenheit) in fahrenheit_table(-10, 30, 10) {
        println!("{celsius:>4} C = {fahrenheit:6.1} F");
    }
    for (customer, total) in totals_per_customer(&ORDERS) {
        println!("{customer:<6} {total:8.2}");
    }
}
