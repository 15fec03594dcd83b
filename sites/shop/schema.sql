-- One database for the storefront (shopping) and the admin (shopping_admin), like Magento's.
-- Money is stored in REAL dollars rounded to cents; dates are ISO-8601 text 'YYYY-MM-DD HH:MM:SS' (site time).
CREATE TABLE category (
  id INTEGER PRIMARY KEY, name TEXT NOT NULL, slug TEXT NOT NULL UNIQUE,
  parent_id INTEGER REFERENCES category(id), position INTEGER NOT NULL
);
CREATE TABLE product (
  id INTEGER PRIMARY KEY, sku TEXT NOT NULL UNIQUE, name TEXT NOT NULL, slug TEXT NOT NULL UNIQUE,
  category_id INTEGER NOT NULL REFERENCES category(id), price REAL NOT NULL, qty INTEGER NOT NULL,
  status INTEGER NOT NULL DEFAULT 1,            -- 1 enabled, 2 disabled (Magento's codes)
  description TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE INDEX product_category ON product(category_id);
CREATE TABLE customer (
  id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE, firstname TEXT NOT NULL, lastname TEXT NOT NULL,
  password_hash TEXT NOT NULL, telephone TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE TABLE address (
  id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customer(id),
  firstname TEXT NOT NULL, lastname TEXT NOT NULL, street TEXT NOT NULL, city TEXT NOT NULL,
  region TEXT NOT NULL, postcode TEXT NOT NULL, country TEXT NOT NULL, telephone TEXT NOT NULL,
  is_default INTEGER NOT NULL DEFAULT 0         -- default billing and shipping address
);
CREATE TABLE sales_order (
  id INTEGER PRIMARY KEY, increment_id TEXT NOT NULL UNIQUE, customer_id INTEGER NOT NULL REFERENCES customer(id),
  status TEXT NOT NULL,                          -- pending | processing | complete | canceled | holded
  created_at TEXT NOT NULL, subtotal REAL NOT NULL, shipping_amount REAL NOT NULL, grand_total REAL NOT NULL,
  ship_name TEXT NOT NULL, ship_street TEXT NOT NULL, ship_city TEXT NOT NULL, ship_region TEXT NOT NULL,
  ship_postcode TEXT NOT NULL, ship_country TEXT NOT NULL, payment_method TEXT NOT NULL,
  shipping_method TEXT NOT NULL
);
CREATE INDEX order_customer ON sales_order(customer_id);
CREATE TABLE order_item (
  id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL REFERENCES sales_order(id),
  product_id INTEGER NOT NULL REFERENCES product(id), sku TEXT NOT NULL, name TEXT NOT NULL,
  price REAL NOT NULL, qty INTEGER NOT NULL
);
CREATE INDEX item_order ON order_item(order_id);
CREATE TABLE order_status_history (
  id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL REFERENCES sales_order(id), status TEXT NOT NULL,
  comment TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE TABLE review (
  id INTEGER PRIMARY KEY, product_id INTEGER NOT NULL REFERENCES product(id),
  customer_id INTEGER REFERENCES customer(id), nickname TEXT NOT NULL, title TEXT NOT NULL, detail TEXT NOT NULL,
  rating INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5), status TEXT NOT NULL, -- approved | pending
  created_at TEXT NOT NULL
);
CREATE INDEX review_product ON review(product_id);
CREATE TABLE wishlist_item (
  id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customer(id),
  product_id INTEGER NOT NULL REFERENCES product(id), added_at TEXT NOT NULL, UNIQUE(customer_id, product_id)
);
CREATE TABLE cart_item (
  id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customer(id),
  product_id INTEGER NOT NULL REFERENCES product(id), qty INTEGER NOT NULL CHECK (qty > 0),
  UNIQUE(customer_id, product_id)
);
CREATE TABLE admin_user (
  id INTEGER PRIMARY KEY, username TEXT NOT NULL UNIQUE, password_hash TEXT NOT NULL,
  firstname TEXT NOT NULL, lastname TEXT NOT NULL, email TEXT NOT NULL
);
