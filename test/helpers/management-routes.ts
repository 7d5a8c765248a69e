// Test helper: every management route (workspaces, presets, provider credentials, broadcast destinations) with a
// concrete path, so auth, fuzz and OpenAPI tests cover the same list.
export type ManagementRoute = {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** OpenAPI path template. */
  template: string;
  /** Fills the template's parameters. */
  path(p: { id?: string; slug?: string; version?: string }): string;
  body: boolean;
  /** Statuses the route documents besides 401/403/413/500. */
  statuses: number[];
};

const r = (
  method: ManagementRoute['method'],
  template: string,
  body: boolean,
  statuses: number[],
): ManagementRoute => ({
  method,
  template,
  body,
  statuses,
  path: (p) =>
    template
      .replace('{id}', encodeURIComponent(p.id ?? '00000000-0000-4000-8000-000000000000'))
      .replace('{slug}', encodeURIComponent(p.slug ?? 'some-preset'))
      .replace('{version}', encodeURIComponent(p.version ?? '1')),
});

export const MANAGEMENT_ROUTES: ManagementRoute[] = [
  r('POST', '/workspaces', true, [201, 400]),
  r('GET', '/workspaces', false, [200, 400]),
  r('GET', '/workspaces/{id}', false, [200, 404]),
  r('PATCH', '/workspaces/{id}', true, [200, 400, 404]),
  r('DELETE', '/workspaces/{id}', false, [200, 404]),
  r('POST', '/presets/{slug}/messages', true, [200, 400, 409]),
  r('POST', '/presets/{slug}/chat/completions', true, [200, 400, 409]),
  r('POST', '/presets/{slug}/responses', true, [200, 400, 409]),
  r('GET', '/presets', false, [200, 400]),
  r('GET', '/presets/{slug}', false, [200, 404]),
  r('GET', '/presets/{slug}/versions', false, [200, 400, 404]),
  r('GET', '/presets/{slug}/versions/{version}', false, [200, 400, 404]),
  r('POST', '/byok', true, [201, 400]),
  r('GET', '/byok', false, [200, 400]),
  r('GET', '/byok/{id}', false, [200, 400, 404]),
  r('PATCH', '/byok/{id}', true, [200, 400, 404]),
  r('DELETE', '/byok/{id}', false, [200, 400, 404]),
  r('POST', '/observability/destinations', true, [201, 400]),
  r('GET', '/observability/destinations', false, [200, 400]),
  r('GET', '/observability/destinations/{id}', false, [200, 400, 404]),
  r('DELETE', '/observability/destinations/{id}', false, [200, 400, 404]),
];
