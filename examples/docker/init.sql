-- The sample shop's schema, the outbox table, and the two roles: the application's and the router's.
CREATE TABLE orders (
  id         bigint PRIMARY KEY,
  customer   text NOT NULL,
  status     text NOT NULL,
  total      numeric(10,2) NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE outbox (
  id            uuid PRIMARY KEY,
  aggregatetype varchar(255) NOT NULL,
  aggregateid   varchar(255) NOT NULL,
  type          varchar(255) NOT NULL,
  payload       jsonb,
  created_at    timestamptz NOT NULL DEFAULT now()
);
-- The router's self-audit reads the rows by created_at.
CREATE INDEX outbox_created_at ON outbox (created_at);

CREATE ROLE shop_app WITH LOGIN PASSWORD 'shop-password';
GRANT SELECT, INSERT, UPDATE, DELETE ON orders, outbox TO shop_app;

-- The router: logical replication, read access to the outbox, and a place for its offsets table.
CREATE ROLE outbox_router WITH LOGIN REPLICATION PASSWORD 'router-password';
GRANT SELECT ON outbox TO outbox_router;
GRANT CREATE ON SCHEMA public TO outbox_router;

-- Made by the table owner; the router uses it as it is (named after the router: shop-router -> shop_router).
CREATE PUBLICATION shop_router FOR TABLE public.outbox;
