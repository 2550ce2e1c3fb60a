-- Four small tasks, written the same way in every language of this folder.
-- Runs in SQLite 3.35+ (recursive common table expressions, no extensions).

CREATE TABLE orders (customer TEXT, product TEXT, quantity INTEGER, price REAL);
INSERT INTO orders (customer, product, quantity, price) VALUES
  ('anna', 'bread', 2, 3.50),
  ('ben', 'coffee', 1, 4.20),
  ('anna', 'cake', 1, 2.80),
  ('chen', 'bread', 3, 3.50),
  ('ben', 'croissant', 4, 1.90);

-- Count lower-cased words and return the most frequent ones.
WITH RECURSIVE
  source(text) AS (
    SELECT lower(replace(replace('The baker knows the neighbours, and the neighbours know the baker.', ',', ''), '.', '')) || ' '
  ),
  split(word, rest) AS (
    SELECT '', text FROM source
    UNION ALL
    SELECT substr(rest, 1, instr(rest, ' ') - 1), substr(rest, instr(rest, ' ') + 1)
    FROM split WHERE rest <> ''
  )
SELECT word, count(*) AS count
FROM split WHERE word <> ''
GROUP BY word ORDER BY count DESC, word LIMIT 3;

-- True when the letters read the same backwards.
WITH RECURSIVE
  candidates(text) AS (VALUES ('Never odd or even'), ('solar panel')),
  letters(text, clean) AS (
    SELECT text, lower(replace(text, ' ', '')) FROM candidates
  ),
  reversed(text, clean, rev, i) AS (
    SELECT text, clean, '', length(clean) FROM letters
    UNION ALL
    SELECT text, clean, rev || substr(clean, i, 1), i - 1 FROM reversed WHERE i > 0
  )
SELECT text, clean = rev AS is_palindrome FROM reversed WHERE i = 0;

-- Celsius to Fahrenheit, one row per step.
WITH RECURSIVE celsius(c) AS (
  SELECT -10
  UNION ALL
  SELECT c + 10 FROM celsius WHERE c < 30
)
SELECT c AS celsius, round(c * 9.0 / 5.0 + 32, 1) AS fahrenheit FROM celsius;

-- Sum quantity * price per customer, largest total first.
SELECT customer, round(sum(quantity * price), 2) AS total
FROM orders
GROUP BY customer
ORDER BY total DESC;
