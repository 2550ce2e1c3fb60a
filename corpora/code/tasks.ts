// Four small tasks, written the same way in every language of this folder.

type Order = [customer: string, product: string, quantity: number, price: number];

const TEXT = "The baker knows the neighbours, and the neighbours know the baker.";

const ORDERS: Order[] = [
  ["anna", "bread", 2, 3.5],
  ["ben", "coffee", 1, 4.2],
  ["anna", "cake", 1, 2.8],
  ["chen", "bread", 3, 3.5],
  ["ben", "croissant", 4, 1.9],
];

/** Count lower-cased words and return the most frequent ones. */
export function wordCounts(text: string, top = 3): Array<[string, number]> {
  const counts = new Map<string, number>();
  for (const word of text.toLowerCase().match(/[a-z]+/g) ?? []) {
    counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return [...counts.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
}

/** True when the letters read the same backwards. */
export function isPalindrome(text: string): boolean {
  const letters = text.toLowerCase().replace(/[^a-z0-9]/g, "");
  return letters === [...letters].reverse().join("");
}

/** Celsius to Fahrenheit, one row per step. */
export function fahrenheitTable(start: number, stop: number, step: number): Array<[number, number]> {
  const rows: Array<[number, number]> = [];
  for (let c = start; c <= stop; c += step) {
    rows.push([c, (c * 9) / 5 + 32]);
  }
  return rows;
}

/** Sum quantity * price per customer, largest total first. */
export function totalsPerCustomer(orders: Order[]): Array<[string, number]> {
  const totals = new Map<string, number>();
  for (const [customer, , quantity, price] of orders) {
    totals.set(customer, (totals.get(customer) ?? 0) + quantity * price);
  }
  return [...totals.entries()].sort((a, b) => b[1] - a[1]);
}

function main(): void {
  for (const [word, count] of wordCounts(TEXT)) {
    console.log(`${word}: ${count}`);
  }
  for (const candidate of ["Never odd or even", "solar panel"]) {
    console.log(`'${candidate}' is a palindrome: ${isPalindrome(candidate)}`);
  }
  for (const [celsius, fahrenheit] of fahrenheitTable(-10, 30, 10)) {
    console.log(`${String(celsius).padStart(4)} C = ${fahrenheit.toFixed(1).padStart(6)} F`);
  }
  for (const [customer, total] of totalsPerCustomer(ORDERS)) {
    console.log(`${customer.padEnd(6)} ${total.toFixed(2).padStart(8)}`);
  }
}

main();
