/**
 * The /docs page and its start script. The script is a separate file (no inline script, so the
 * page runs under `script-src 'self'`). One link per document above Swagger UI's own selector switches
 * between them; `?doc=partner|tomp|feeds|legacy` chooses the one shown first. Documents Swagger UI
 * does not render (the AsyncAPI document of the vehicle protocol) are linked after them, as JSON.
 */

export interface DocLink {
  key: string;
  name: string;
  url: string;
}

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function docsPage(docs: DocLink[], others: Array<Omit<DocLink, 'key'>> = []): string {
  const links = [
    ...docs.map(
      (d) => `<a class="doc-link" data-doc="${esc(d.key)}" href="/docs?doc=${encodeURIComponent(d.key)}">${esc(d.name)}</a> <a class="doc-json" href="${esc(d.url)}">JSON</a>`,
    ),
    ...others.map((d) => `<span class="doc-other">${esc(d.name)}</span> <a class="doc-json" href="${esc(d.url)}">JSON</a>`),
  ].join('\n      ');
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>API documentation</title>
    <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png" sizes="32x32">
    <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
    <link rel="stylesheet" href="/docs/docs.css">
  </head>
  <body>
    <nav id="documents" aria-label="API documents">
      <strong>API documents:</strong>
      ${links}
    </nav>
    <div id="swagger-ui"></div>
    <noscript>This page needs JavaScript. The documents themselves: ${[...docs, ...others].map((d) => `<a href="${esc(d.url)}">${esc(d.name)}</a>`).join(', ')}.</noscript>
    <script src="/docs/assets/swagger-ui-bundle.js"></script>
    <script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
    <script src="/docs/init.js"></script>
  </body>
</html>
`;
}

export function docsScript(docs: DocLink[]): string {
  return `'use strict';
(function () {
  var docs = ${JSON.stringify(docs)};
  var wanted = new URLSearchParams(window.location.search).get('doc');
  var primary = docs.filter(function (d) { return d.key === wanted; })[0] || docs[0];
  document.querySelectorAll('#documents .doc-link').forEach(function (a) {
    if (a.getAttribute('data-doc') === primary.key) a.setAttribute('aria-current', 'page');
  });
  window.ui = SwaggerUIBundle({
    urls: docs.map(function (d) { return { url: d.url, name: d.name }; }),
    'urls.primaryName': primary.name,
    dom_id: '#swagger-ui',
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: 'StandaloneLayout',
    // the default validator badge calls an outside service; the page must work offline
    validatorUrl: null,
    defaultModelsExpandDepth: 0,
    displayRequestDuration: true,
    persistAuthorization: false
  });
})();
`;
}

export const DOCS_CSS = `
#documents { font-family: sans-serif; padding: 10px 20px; background: #f4f4f4; border-bottom: 1px solid #ddd; }
#documents a { margin-right: 4px; }
#documents a.doc-json { font-size: 0.8em; margin-right: 16px; color: #666; }
#documents a[aria-current="page"] { font-weight: bold; }
#documents .doc-other { color: #333; }
`;
