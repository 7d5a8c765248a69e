-- Keys managed over the API (docs/guides/keys-and-budgets.md): a key can be disabled, expire, and
-- carry a spending limit in USD that resets daily, weekly or monthly (UTC), counting BYOK spend
-- or not. Spend is the request log's cost, read per key and period, hence the index.
alter table api_keys add column disabled boolean not null default false;
alter table api_keys add column expires_at timestamptz;
alter table api_keys add column updated_at timestamptz;
alter table api_keys add column limit_usd double precision;
alter table api_keys add column limit_reset text check (limit_reset in ('daily', 'weekly', 'monthly'));
alter table api_keys add column include_byok_in_limit boolean not null default false;
create index inference_requests_key on inference_requests (api_key_id, created_at);
