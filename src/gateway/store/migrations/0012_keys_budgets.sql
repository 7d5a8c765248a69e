-- Keys managed over the API (docs/guides/keys-and-budgets.md): a key can be disabled, expire, and
-- carry a spending limit in USD that resets daily, weekly or monthly (UTC), counting BYOK spend
-- or not. Spend is the request log's cost, charged to the key that pays for the request: the
-- caller's own, or for an intern's key the key that created the intern (so deleting an intern
-- does not hand its spend back); read per key and period, hence the index.
alter table api_keys add column disabled boolean not null default false;
alter table api_keys add column expires_at timestamptz;
alter table api_keys add column updated_at timestamptz;
alter table api_keys add column limit_usd double precision;
alter table api_keys add column limit_reset text check (limit_reset in ('daily', 'weekly', 'monthly'));
alter table api_keys add column include_byok_in_limit boolean not null default false;
alter table inference_requests add column charged_key_id uuid;
update inference_requests r set charged_key_id = coalesce(
  (select i.creator_key_id from interns i where i.api_key_id = r.api_key_id), r.api_key_id);
create index inference_requests_charged on inference_requests (charged_key_id, created_at);
