"""The sales feed's schema, shared by the store's jobs."""

SALE = "sale_id STRING, store STRING, amount DOUBLE, sold_at STRING"
