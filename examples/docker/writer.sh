#!/usr/bin/env bash
# A sample service: each order change and its outbox event in one transaction, one per second.
set -u
until psql -qtAc 'SELECT 1' >/dev/null 2>&1; do sleep 1; done
# The router publishes what commits after its replication slot exists (snapshot: none): wait for its first start to
# make it, or the first orders would never reach Kafka.
slot=${ROUTER_SLOT:-shop_router}
until [ "$(psql -qtAc "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$slot' AND confirmed_flush_lsn IS NOT NULL" 2>/dev/null)" = "1" ]; do
  echo "writer: waiting for the router's replication slot $slot"
  sleep 1
done
id=$(psql -qtAc 'SELECT coalesce(max(id), 0) FROM orders')
while true; do
  id=$((id + 1))
  psql -q -v ON_ERROR_STOP=1 <<SQL
BEGIN;
INSERT INTO orders (id, customer, status, total) VALUES ($id, 'customer-$((id % 7))', 'PLACED', $((RANDOM % 200)).99);
INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
  VALUES (gen_random_uuid(), 'Order', 'order-$id', 'OrderPlaced', '{"orderId": $id, "status": "PLACED"}');
COMMIT;
SQL
  echo "writer: order $id placed"
  sleep 1
done
