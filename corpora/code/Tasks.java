// Four small tasks, written the same way in every language of this folder.

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public class Tasks {
    static final String TEXT = "The baker knows the neighbours, and the neighbours know the baker.";

    record Order(String customer, String product, int quantity, double price) {}

    static final List<Order> ORDERS = List.of(
        new Order("anna", "bread", 2, 3.50),
        new Order("ben", "coffee", 1, 4.20),
        new Order("anna", "cake", 1, 2.80),
        new Order("chen", "bread", 3, 3.50),
        new Order("ben", "croissant", 4, 1.90));

    /** Count lower-cased words and return the most frequent ones. */
    static List<Map.Entry<String, Integer>> wordCounts(String text, int top) {
        Map<String, Integer> counts = new HashMap<>();
        Matcher matcher = Pattern.compile("[a-z]+").matcher(text.toLowerCase());
        while (matcher.find()) {
            counts.merge(matcher.group(), 1, Integer::sum);
        }
        List<Map.Entry<String, Integer>> entries = new ArrayList<>(counts.entrySet());
        entries.sort((a, b) -> b.getValue() - a.getValue());
        return entries.subList(0, Math.min(top, entries.size()));
    }

    /** True when the letters read the same backwards. */
    static boolean isPalindrome(String text) {
        String letters = text.toLowerCase().replaceAll("[^a-z0-9]", "");
        return letters.equals(new StringBuilder(letters).reverse().toString());
    }

    /** Celsius to Fahrenheit, one row per step. */
    static List<double[]> fahrenheitTable(int start, int stop, int step) {
        List<double[]> rows = new ArrayList<>();
        for (int c = start; c <= stop; c += step) {
            rows.add(new double[] {c, c * 9.0 / 5.0 + 32.0});
        }
        return rows;
    }

    /** Sum quantity * price per customer, largest total first. */
    static List<Map.Entry<String, Double>> totalsPerCustomer(List<Order> orders) {
        Map<String, Double> totals = new HashMap<>();
        for (Order order : orders) {
            totals.merge(order.customer(), order.quantity() * order.price(), Double::sum);
        }
        List<Map.Entry<String, Double>> entries = new ArrayList<>(totals.entrySet());
        entries.sort((a, b) -> Double.compare(b.getValue(), a.getValue()));
        return entries;
    }

    public static void main(String[] args) {
        for (Map.Entry<String, Integer> entry : wordCounts(TEXT, 3)) {
            System.out.printf("%s: %d%n", entry.getKey(), entry.getValue());
        }
        for (String candidate : List.of("Never odd or even", "solar panel")) {
            System.out.printf("'%s' is a palindrome: %b%n", candidate, isPalindrome(candidate));
        }
        for (double[] row : fahrenheitTable(-10, 30, 10)) {
            System.out.printf("%4d C = %6.1f F%n", (int) row[0], row[1]);
        }
        for (Map.Entry<String, Double> entry : totalsPerCustomer(ORDERS)) {
            System.out.printf("%-6s %8.2f%n", entry.getKey(), entry.getValue());
        }
    }
}
