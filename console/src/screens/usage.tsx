// Usage: requests, tokens and cost per day and per model, as a stacked bar chart (a value axis
// with round ticks, each day's total above its bar, each part's value on hover) with the same
// figures in a table. The figures come from the request log as OpenRouter's activity endpoint
// shapes them (GET /api/v1/activity, management key, one row per day and model). Below, the
// latest requests one by one (GET /api/v1/generations), each with its logged bodies on demand
// (GET /api/v1/generation/content; docs/guides/observability.md).
import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, problem, type Problem } from '../api.ts';
import { Alert, Choice, Loading, Page } from '../ui.tsx';

export type ActivityRow = {
  date: string;
  model: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens?: number;
  usage: number;
  byok_usage_inference?: number;
};
type Metric = 'requests' | 'tokens' | 'cost';

const value = (r: ActivityRow, m: Metric) =>
  m === 'requests'
    ? r.requests
    : m === 'tokens'
      ? r.prompt_tokens + r.completion_tokens
      : r.usage + (r.byok_usage_inference ?? 0);
const format = (v: number, m: Metric) => (m === 'cost' ? `$${v.toFixed(v < 1 ? 4 : 2)}` : v.toLocaleString('en'));
/** Distinct at AA contrast against white, and told apart by the legend's order as well as colour. */
const COLOURS = ['#1d4ed8', '#b45309', '#047857', '#7e22ce', '#be123c', '#0e7490', '#4d7c0f', '#57534e'];

/** Days (oldest first), models (largest first) and each day's value per model. */
export function series(rows: ActivityRow[], m: Metric) {
  const days = [...new Set(rows.map((r) => r.date.slice(0, 10)))].sort();
  const totals = new Map<string, number>();
  for (const r of rows) totals.set(r.model, (totals.get(r.model) ?? 0) + value(r, m));
  const models = [...totals.keys()].sort((a, b) => totals.get(b)! - totals.get(a)!);
  const cell = (day: string, model: string) =>
    rows.filter((r) => r.date.slice(0, 10) === day && r.model === model).reduce((s, r) => s + value(r, m), 0);
  return { days, models, values: days.map((d) => models.map((mo) => cell(d, mo))) };
}

/** A round axis top at or above the highest value, and its ticks (0 and four steps). */
export function axis(max: number): number[] {
  if (max <= 0) return [0, 1];
  const rough = max / 4;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= rough)!;
  return Array.from({ length: Math.ceil(max / step - 1e-9) + 1 }, (_, i) => i * step);
}

function Chart({ rows, metric }: { rows: ActivityRow[]; metric: Metric }) {
  const { days, models, values } = series(rows, metric);
  const totals = values.map((v) => v.reduce((a, b) => a + b, 0));
  const max = Math.max(...totals, 0);
  const ticks = axis(max);
  const top = ticks[ticks.length - 1]!;
  const W = 640,
    H = 260,
    left = 64,
    right = 8,
    bottom = 28,
    head = 22,
    gap = 6;
  const plot = H - bottom - head;
  const slot = (W - left - right) / Math.max(days.length, 1);
  const width = Math.min(slot - gap, 64);
  const colour = (i: number) => COLOURS[i % COLOURS.length];
  const yOf = (v: number) => H - bottom - (v / top) * plot;
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby="chart-title">
        <title id="chart-title">{`${metric} per day, stacked by model; the highest day is ${format(max, metric)}`}</title>
        {ticks.map((t) => (
          <g key={t} class="tick">
            <line x1={left} x2={W - right} y1={yOf(t)} y2={yOf(t)} />
            <text x={left - 6} y={yOf(t) + 4} text-anchor="end">
              {format(t, metric)}
            </text>
          </g>
        ))}
        {days.map((day, d) => {
          let y = H - bottom;
          const x = left + d * slot + (slot - width) / 2;
          return (
            <g key={day}>
              {models.map((model, i) => {
                const h = ((values[d]![i] ?? 0) / top) * plot;
                y -= h;
                return h > 0 ? (
                  <rect x={x} y={y} width={width} height={h} fill={colour(i)}>
                    <title>{`${day} · ${model}: ${format(values[d]![i]!, metric)}`}</title>
                  </rect>
                ) : null;
              })}
              <text x={x + width / 2} y={yOf(totals[d]!) - 6} text-anchor="middle" class="value">
                {format(totals[d]!, metric)}
              </text>
              <text x={x + width / 2} y={H - 10} text-anchor="middle">
                {day.slice(5)}
              </text>
            </g>
          );
        })}
        <line class="axis" x1={left} x2={left} y1={head} y2={H - bottom} />
        <line class="axis" x1={left} x2={W - right} y1={H - bottom} y2={H - bottom} />
      </svg>
      <figcaption>
        <ul class="legend">
          {models.map((m, i) => (
            <li key={m}>
              <span class="swatch" style={{ background: colour(i) }} />
              {m}
            </li>
          ))}
        </ul>
      </figcaption>
    </figure>
  );
}

type Generation = {
  id: string;
  created_at: string;
  model: string;
  status: number;
  tokens_prompt: number | null;
  tokens_completion: number | null;
  total_cost: number;
  latency: number | null;
  session_id: string | null;
};
type Content = { input: { prompt: string } | { messages: unknown[] }; output: { completion: string | null } };

/** One request's logged input and output, or why there are none. */
function Bodies({ id }: { id: string }) {
  const [content, setContent] = useState<Content | null>(null);
  const [error, setError] = useState<Problem | null>(null);
  useEffect(() => {
    api<{ data: Content }>('GET', `/generation/content?id=${encodeURIComponent(id)}`).then(
      (r) => setContent(r.data),
      (e) => setError(problem(e)),
    );
  }, [id]);
  if (error)
    return (
      <p class="bodies">
        {error.status === 404
          ? 'Its bodies were not kept (I/O logging is off for it, or retention cleared them).'
          : error.message}
      </p>
    );
  if (!content) return <Loading what="the bodies" />;
  return (
    <div class="bodies">
      <p>Input</p>
      <pre class="input">{JSON.stringify(content.input, null, 2)}</pre>
      <p>Output</p>
      <pre class="output">{content.output.completion ?? ''}</pre>
    </div>
  );
}

function Requests() {
  const [rows, setRows] = useState<Generation[] | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  useEffect(() => {
    api<{ data: Generation[] }>('GET', '/generations?limit=25').then(
      (r) => setRows(r.data),
      () => setRows([]),
    );
  }, []);
  if (!rows?.length) return null;
  return (
    <div class="table-wrap">
      <table class="requests">
        <caption>Latest requests</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Model</th>
            <th scope="col">Status</th>
            <th scope="col">Tokens</th>
            <th scope="col">Cost</th>
            <th scope="col">Session</th>
            <th scope="col">Bodies</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((g) => (
            <Fragment key={g.id}>
              <tr>
                <td>{g.created_at.slice(0, 19).replace('T', ' ')}</td>
                <td>
                  <code>{g.model}</code>
                </td>
                <td>{g.status}</td>
                <td>{format((g.tokens_prompt ?? 0) + (g.tokens_completion ?? 0), 'tokens')}</td>
                <td>{format(g.total_cost, 'cost')}</td>
                <td>{g.session_id ?? ''}</td>
                <td>
                  <button
                    type="button"
                    aria-expanded={open === g.id}
                    aria-label={`${open === g.id ? 'Hide' : 'Show'} the bodies of ${g.id}`}
                    onClick={() => setOpen(open === g.id ? null : g.id)}
                  >
                    {open === g.id ? 'Hide' : 'Show'}
                  </button>
                </td>
              </tr>
              {open === g.id ? (
                <tr>
                  <td colSpan={7}>
                    <Bodies id={g.id} />
                  </td>
                </tr>
              ) : null}
            </Fragment>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function Usage() {
  const [rows, setRows] = useState<ActivityRow[] | null>(null);
  const [error, setError] = useState<Problem | null>(null);
  const [metric, setMetric] = useState<Metric>('requests');
  const load = () =>
    api<{ data: ActivityRow[] }>('GET', '/activity').then(
      (r) => {
        setRows(r.data);
        setError(null);
      },
      (e) => setError(problem(e)),
    );
  useEffect(() => void load(), []);
  return (
    <Page title="Usage">
      {error ? (
        <Alert
          problem={error}
          words={error.status === 403 ? 'Usage needs a management key.' : undefined}
          onRetry={load}
        />
      ) : !rows ? (
        <Loading what="usage" />
      ) : rows.length === 0 ? (
        <p>No requests recorded yet.</p>
      ) : (
        <>
          <Choice
            label="Show"
            name="metric"
            value={metric}
            onChange={(v) => setMetric(v as Metric)}
            options={[
              ['requests', 'Requests'],
              ['tokens', 'Tokens'],
              ['cost', 'Cost (USD)'],
            ]}
          />
          <Chart rows={rows} metric={metric} />
          <div class="table-wrap">
            <table class="stack">
              <caption>Per day and model</caption>
              <thead>
                <tr>
                  <th scope="col">Day</th>
                  <th scope="col">Model</th>
                  <th scope="col">Requests</th>
                  <th scope="col">Tokens</th>
                  <th scope="col">Cost</th>
                </tr>
              </thead>
              <tbody>
                {[...rows]
                  .sort((a, b) => b.date.localeCompare(a.date) || a.model.localeCompare(b.model))
                  .map((r) => (
                    <tr key={r.date + r.model}>
                      <td data-label="Day">{r.date.slice(0, 10)}</td>
                      <td data-label="Model">
                        <code>{r.model}</code>
                      </td>
                      <td data-label="Requests">{r.requests}</td>
                      <td data-label="Tokens">{format(value(r, 'tokens'), 'tokens')}</td>
                      <td data-label="Cost">{format(value(r, 'cost'), 'cost')}</td>
                    </tr>
                  ))}
              </tbody>
            </table>
          </div>
          <Requests />
        </>
      )}
    </Page>
  );
}
