// The operator console page (served by api/console/page.ts). Plain browser JavaScript, no build
// step: every figure comes from /console/api with the ops key the operator typed, kept in
// sessionStorage for the tab's life. Leaflet draws the fleet map from the zone's GeoJSON, with no
// base tiles (nothing is fetched from outside the machine).
(function () {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const state = {
    key: sessionStorage.getItem('opsKey') || '',
    zones: [],
    selected: new Map(),
    map: null,
    layers: null,
    fitted: false,
    fleetTimer: null,
    pubFollow: null,
    lastHealth: null,
  };

  async function api(path, init = {}) {
    const res = await fetch(`/console/api${path}`, {
      ...init,
      headers: { 'X-Access-Token': state.key, 'Content-Type': 'application/json', ...(init.headers || {}) },
    });
    const body = await res.json().catch(() => ({}));
    // 401: no such key; 403: a key of another API (the message names which)
    if (res.status === 401 || res.status === 403) {
      logout('the ops key was refused: ' + (body.error_description || 'unauthorized'));
      throw new Error('unauthorized');
    }
    if (!res.ok) throw new Error(body.error_description || `HTTP ${res.status}`);
    return body;
  }

  // Leaflet's tooltips and popups take HTML: names from imported zone files are text, not markup
  const esc = (v) => String(v ?? '').replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]);

  function el(tag, attrs = {}, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (k === 'class') e.className = v;
      else if (k.startsWith('data-')) e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }

  // numbers right-aligned; an empty table says so rather than showing a bare header
  function table(headers, rows) {
    const body = rows.length
      ? rows.map((r) => el('tr', {}, ...r.map((c) => el('td', { class: typeof c === 'number' ? 'num' : '' }, c ?? '–'))))
      : [el('tr', {}, el('td', { colSpan: headers.length, class: 'empty' }, 'none so far'))];
    return el('table', { class: 'figures' }, el('thead', {}, el('tr', {}, ...headers.map((h) => el('th', {}, h)))), el('tbody', {}, ...body));
  }

  // ---- login ---------------------------------------------------------------------------------
  function logout(message) {
    sessionStorage.removeItem('opsKey');
    state.key = '';
    $('tabs').hidden = true;
    for (const v of document.querySelectorAll('.view')) v.hidden = true;
    $('login').hidden = false;
    $('login-error').textContent = message || '';
  }

  async function login(key) {
    state.key = key;
    const pub = await api('/publishing');
    sessionStorage.setItem('opsKey', key);
    state.zones = [...new Set(pub.rows.map((r) => r.zone))].sort();
    for (const sel of [$('pub-zone'), $('fleet-zone'), $('policy-zone')]) {
      sel.replaceChildren(...state.zones.map((z) => el('option', { value: z }, z)));
    }
    $('login').hidden = true;
    $('tabs').hidden = false;
    show('publishing');
  }

  // ---- views ---------------------------------------------------------------------------------
  function show(view) {
    for (const b of document.querySelectorAll('#tabs button[data-view]')) b.classList.toggle('active', b.dataset.view === view);
    for (const v of document.querySelectorAll('.view')) v.hidden = v.id !== view;
    clearInterval(state.fleetTimer);
    if (view === 'publishing') loadPublishing().catch(report('pub-message'));
    if (view === 'fleet') loadFleet().catch(report('fleet-status'));
    if (view === 'health') loadHealth().catch(report('health-body'));
    if (view === 'credentials') loadCredentials().catch(report('credentials-body'));
    if (view === 'policy') loadPolicy().catch(report('policy-message'));
  }

  const report = (id) => (err) => {
    if (err.message !== 'unauthorized') $(id).textContent = `error: ${err.message}`;
  };

  // Publishing: hours × feeds of one zone, the same figures as `make publish-status`
  // keepSelection: a refresh while republished files are followed keeps the cells chosen meanwhile
  // that can still be republished
  async function loadPublishing({ keepSelection = false } = {}) {
    const zone = $('pub-zone').value;
    const qs = new URLSearchParams({ zone });
    if ($('pub-from').value) qs.set('from', $('pub-from').value);
    if ($('pub-to').value) qs.set('to', $('pub-to').value);
    const s = await api(`/publishing?${qs}`);
    const kept = keepSelection ? new Set(state.selected.keys()) : new Set();
    state.selected.clear();
    $('pub-totals').textContent = Object.entries(s.totals)
      .map(([k, v]) => `${k} ${v}`)
      .join(' · ');
    const head = el('tr', {}, el('th', {}, 'hour'), ...s.feeds.map((f) => el('th', { title: f }, f.replace(/-/g, ' '))));
    const rows = s.rows
      .filter((r) => r.zone === zone)
      .map((r) =>
        el(
          'tr',
          {},
          el('th', {}, r.hour),
          ...s.feeds.map((f) => {
            const st = r.states[f];
            const td = el('td', { class: `cell ${st}`, title: `${f} ${r.hour}: ${st}`, 'data-feed': f, 'data-hour': r.hour, 'data-state': st });
            if (st === 'failed' || st === 'dirty') {
              td.addEventListener('click', () => toggle(td));
              if (kept.has(`${f}|${r.hour}`)) toggle(td);
            }
            return td;
          }),
        ),
      );
    $('heatmap').replaceChildren(el('thead', {}, head), el('tbody', {}, ...rows));
    updateRepublishButton();
  }

  function toggle(td) {
    const key = `${td.dataset.feed}|${td.dataset.hour}`;
    if (state.selected.has(key)) state.selected.delete(key);
    else state.selected.set(key, { feed: td.dataset.feed, hour: td.dataset.hour });
    td.classList.toggle('selected', state.selected.has(key));
    updateRepublishButton();
  }

  function updateRepublishButton() {
    $('republish').disabled = state.selected.size === 0;
    $('republish').textContent = `Republish selected (${state.selected.size})`;
  }

  // The API queues the rewrite for the publishers and answers at once (202, one job per hour):
  // the table is read again every 2 s for about 20 s, so the cells change as the jobs finish.
  async function republish() {
    const zone = $('pub-zone').value;
    const cells = [...state.selected.values()];
    $('pub-message').textContent = `queueing ${cells.length} file(s)…`;
    const r = await api('/republish', { method: 'POST', body: JSON.stringify({ zone, cells }) });
    const files = r.jobs.reduce((n, j) => n + j.feeds.length, 0);
    const reasons = [...new Set(r.skipped.map((s) => s.reason))].join('; ');
    $('pub-message').textContent =
      `queued: ${files} file(s) in ${r.jobs.length} job(s)` + (r.skipped.length ? `, ${r.skipped.length} skipped (${reasons})` : '');
    // one follow at a time: a later republish takes over from an earlier one's
    const until = Date.now() + 20_000;
    const run = (state.pubFollow = {});
    const follow = () => {
      // over once the operator looks elsewhere (another view or zone)
      if (state.pubFollow !== run || Date.now() > until || $('publishing').hidden || $('pub-zone').value !== zone) return;
      loadPublishing({ keepSelection: true }).then(() => setTimeout(follow, 2000), report('pub-message'));
    };
    await loadPublishing();
    setTimeout(follow, 2000);
  }

  // Fleet: the zone's boundary and areas from its GeoJSON, vehicles by status, refreshed on the GBFS ttl
  const AREA_COLORS = {
    operations: '#2271b1',
    'no-parking': '#d63638',
    'no-riding': '#8c1d1e',
    'parking-spot': '#00a32a',
    'slow-zone': '#dba617',
    incentive: '#9b59b6',
    'free-floating': '#72aee6',
  };
  const STATUS_COLORS = { ready: '#00a32a', riding: '#2271b1', booked: '#9b59b6', unavailable: '#d63638' };

  async function loadFleet() {
    const zone = $('fleet-zone').value;
    const f = await api(`/fleet?zone=${encodeURIComponent(zone)}`);
    if (!state.map) {
      // no fade: a popup is readable the moment it opens
      state.map = L.map('map', { zoomSnap: 0.25, fadeAnimation: false });
      const legend = L.control({ position: 'bottomright' });
      legend.onAdd = () => {
        const d = L.DomUtil.create('div', 'map-legend');
        d.innerHTML =
          '<b>areas</b><br>' +
          Object.entries(AREA_COLORS)
            .map(([k, c]) => `<i style="background:${c}"></i>${k}`)
            .join('<br>') +
          '<br><b>vehicles</b><br>' +
          Object.entries(STATUS_COLORS)
            .map(([k, c]) => `<i style="background:${c};border-radius:6px"></i>${k}`)
            .join('<br>');
        return d;
      };
      legend.addTo(state.map);
    }
    state.layers?.remove();
    const boundary = L.geoJSON(f.boundary, { style: { color: '#1d2327', weight: 2, fill: false } });
    const areas = L.geoJSON(f.areas, {
      // the city's areas (its MDS Policy rules in force) drawn dashed, over the operator's
      style: (feat) => ({
        color: AREA_COLORS[feat.properties.area_type] || '#50575e',
        weight: feat.properties.source === 'city' ? 2 : 1,
        dashArray: feat.properties.source === 'city' ? '6 4' : null,
        fillOpacity: 0.2,
      }),
    }).bindTooltip(
      (layer) =>
        `${esc(layer.feature.properties.area_type)}: ${esc(layer.feature.properties.name)}${layer.feature.properties.source === 'city' ? ' (city rule)' : ''}`,
    );
    const vehicles = f.vehicles.map((v) =>
      L.circleMarker([v.lat, v.lon], {
        radius: 5,
        color: STATUS_COLORS[v.status] || '#50575e',
        fillOpacity: 0.9,
        className: `vehicle vehicle-${v.status}`,
      }).bindPopup(
        `<b>${esc(v.code)}</b><br>battery ${esc(v.battery_percent)} %<br>status ${esc(v.status)}` +
          (v.rental_id ? `<br>rental ${esc(v.rental_id)}<br>since ${esc(v.rental_started_at)}` : '<br>no running rental'),
      ),
    );
    // the view first: Leaflet draws a layer (and creates its element) only on a map that has one
    if (!state.fitted) {
      state.map.fitBounds(boundary.getBounds());
      state.fitted = true;
    }
    state.layers = L.layerGroup([boundary, areas, ...vehicles]).addTo(state.map);
    // the marker's code and status on its SVG element: what a test (or a person in the inspector) finds it by
    vehicles.forEach((m, i) => {
      m.getElement()?.setAttribute('data-code', f.vehicles[i].code);
      m.getElement()?.setAttribute('data-status', f.vehicles[i].status);
    });
    $('map').dataset.vehicles = String(f.vehicles.length);
    $('fleet-status').textContent =
      `${f.name}: ${f.vehicles.length} vehicles, refreshed every ${f.ttl} s (GBFS ttl) · ${new Date().toISOString().slice(11, 19)} UTC`;
    state.fleetTimer = setTimeout(() => loadFleet().catch(report('fleet-status')), f.ttl * 1000);
  }

  // Health: the registry /metrics exports, with rates between two readings
  async function loadHealth() {
    const h = await api('/health');
    const prev = state.lastHealth;
    state.lastHealth = h;
    const secs = prev ? (h.at - prev.at) / 1000 : 0;
    const rate = (fam, k) => (prev && secs > 0 && prev.families[fam] ? Number(((h.families[fam][k] - prev.families[fam][k]) / secs).toFixed(2)) : 'n/a');
    $('health-body').replaceChildren(
      el('p', { id: 'rentals-running' }, `rentals running: ${h.rentals_running}`),
      el('h3', {}, 'requests per API family'),
      table(
        ['family', 'requests', '5xx', 'requests/s', '5xx/s'],
        Object.entries(h.families).map(([f, v]) => [f, v.requests, v.errors, rate(f, 'requests'), rate(f, 'errors')]),
      ),
      el('h3', {}, 'publish lag'),
      table(
        ['feed', 'version', 'seconds'],
        h.publish_lag_seconds.map((p) => [p.feed, p.version, Math.round(Number(p.seconds))]),
      ),
      el('h3', {}, 'queue depth'),
      table(
        ['queue', 'queued'],
        h.queue_depth.map((q) => [q.queue, q.queued]),
      ),
      el('h3', {}, 'store errors'),
      table(
        ['operation', 'errors'],
        h.store_errors.map((s) => [s.op, s.errors]),
      ),
      el('p', {}, 'Rates appear from the second reading on; the view refreshes every 10 s while open.'),
    );
    if (!$('health').hidden) state.fleetTimer = setTimeout(() => loadHealth().catch(report('health-body')), 10_000);
  }

  // Credentials: partners, keys and feed clients, never a secret
  async function loadCredentials() {
    const c = await api('/credentials');
    const when = (t) => (t ? String(t).slice(0, 19).replace('T', ' ') : 'never');
    $('credentials-body').replaceChildren(
      el('h3', {}, 'partners'),
      table(
        ['name', 'kind', 'zones', 'active keys', 'last use'],
        c.partners.map((p) => [p.name, p.kind, (p.zones || ['all']).join(', '), p.active_keys, when(p.last_used_at)]),
      ),
      el('h3', {}, 'API keys'),
      table(
        ['prefix', 'partner', 'scope', 'label', 'revoked', 'last use'],
        c.keys.map((k) => [
          k.key_prefix ?? k.prefix,
          k.partner ?? k.partner_name,
          k.scope,
          k.label,
          k.revoked_at ? when(k.revoked_at) : '',
          when(k.last_used_at),
        ]),
      ),
      el('h3', {}, 'feed clients'),
      el('p', { id: 'cred-message', class: 'message' }),
      table(
        ['client', 'role', 'zones', 'revoked', 'last use', 'API keys (X-Access-Token)', ''],
        c.feed_clients.map((f) => [
          f.client_id,
          f.role,
          (f.zones || ['all']).join(', '),
          f.revoked_at ? when(f.revoked_at) : '',
          when(f.last_used_at),
          feedKeysCell(
            f,
            (c.feed_keys || []).filter((k) => k.client_id === f.client_id && !k.revoked_at),
            when,
          ),
          f.revoked_at
            ? ''
            : el(
                'button',
                { class: 'new-feed-key', 'data-client': f.client_id, onclick: () => newFeedKey(f.client_id).catch(report('cred-message')) },
                'New key',
              ),
        ]),
      ),
    );
  }

  // City rules: the compliance view of a zone (the same as `ops policy status`) and its source
  async function loadPolicy() {
    const zone = $('policy-zone').value;
    const v = await api(`/policy?${new URLSearchParams({ zone })}`);
    const when = (t) => (t ? String(t).slice(0, 19).replace('T', ' ') : '–');
    const s = v.sources[0];
    if (s) {
      $('policy-url').value = s.policy_url;
      $('geography-url').value = s.geography_url;
      $('policy-auth').value = s.auth_type;
    }
    $('policy-body').replaceChildren(
      el(
        'p',
        {},
        s
          ? `last read ${when(s.read_at)} (${s.read_status ?? 'not yet'})${s.read_error ? `: ${s.read_error}` : ''}; last good documents ${when(s.good_at)}; ${s.rules} rules, ${s.in_force} in force`
          : 'this zone has no city Policy source',
      ),
      table(
        ['policy', 'rule', 'becomes', 'in force since', 'km/h', 'commanded', 'not acknowledged', 'figure', 'limit', 'note'],
        v.rules.map((r) => [
          r.policy_name,
          r.rule_name,
          r.mapping,
          r.in_force ? when(r.in_force_since) : 'not in force',
          r.max_speed_kph,
          r.commanded,
          r.unacknowledged,
          r.figure,
          r.maximum,
          r.note,
        ]),
      ),
    );
  }

  // a client's active keys: prefix, label, last use and a revoke button each
  function feedKeysCell(client, keys, when) {
    if (!keys.length) return 'none';
    return el(
      'ul',
      { class: 'feed-keys' },
      ...keys.map((k) =>
        el(
          'li',
          {},
          `${k.key_prefix}… ${k.label ? `(${k.label}) ` : ''}last use ${when(k.last_used_at)} `,
          el(
            'button',
            { class: 'revoke-feed-key', 'data-key': k.id, onclick: () => revokeFeedKey(client.client_id, k).catch(report('cred-message')) },
            'Revoke',
          ),
        ),
      ),
    );
  }

  async function savePolicy() {
    const zone = $('policy-zone').value;
    const body = {
      policy_url: $('policy-url').value.trim(),
      geography_url: $('geography-url').value.trim(),
      auth: $('policy-auth').value,
      secret: $('policy-secret').value || undefined,
      token_url: $('policy-token-url').value.trim() || undefined,
      client_id: $('policy-client-id').value.trim() || undefined,
      scope: $('policy-scope').value.trim() || undefined,
    };
    await api(`/policy/${encodeURIComponent(zone)}`, { method: 'PUT', body: JSON.stringify(body) });
    $('policy-secret').value = '';
    $('policy-message').textContent = `saved: the publisher reads it within a minute`;
    await loadPolicy();
  }

  // queued for the publishers (as `ops policy read`): the view shows the read once a publisher made it
  async function readPolicy() {
    const zone = $('policy-zone').value;
    const r = await api(`/policy/${encodeURIComponent(zone)}/read`, { method: 'POST' });
    $('policy-message').textContent = r.queued ? `read of ${zone} queued: a publisher reads it now` : `a read of ${zone} is already queued`;
    await new Promise((resolve) => setTimeout(resolve, 3000));
    await loadPolicy();
  }

  async function removePolicy() {
    const zone = $('policy-zone').value;
    await api(`/policy/${encodeURIComponent(zone)}`, { method: 'DELETE' });
    $('policy-message').textContent = `removed the source of ${zone} with its rules`;
    await loadPolicy();
  }

  // the key is in the answer once: shown here, then only its prefix
  async function newFeedKey(clientId) {
    const label = window.prompt(`A note for the new key of ${clientId} (optional)`, '');
    if (label === null) return;
    const k = await api(`/feed-clients/${encodeURIComponent(clientId)}/keys`, { method: 'POST', body: JSON.stringify({ label }) });
    await loadCredentials();
    $('cred-message').replaceChildren(`new key of ${clientId} (shown once, copy it now): `, el('code', { id: 'new-feed-key' }, k.key));
  }

  async function revokeFeedKey(clientId, k) {
    if (!window.confirm(`Revoke key ${k.key_prefix}… of ${clientId}? It stops working within 30 s.`)) return;
    await api(`/feed-clients/${encodeURIComponent(clientId)}/keys/${k.id}`, { method: 'DELETE' });
    await loadCredentials();
    $('cred-message').textContent = `revoked key ${k.key_prefix}… of ${clientId}`;
  }

  // ---- wiring --------------------------------------------------------------------------------
  $('login').addEventListener('submit', (e) => {
    e.preventDefault();
    login($('key').value.trim()).catch((err) => {
      if (err.message !== 'unauthorized') $('login-error').textContent = err.message;
    });
  });
  $('logout').addEventListener('click', () => logout());
  for (const b of document.querySelectorAll('#tabs button[data-view]')) b.addEventListener('click', () => show(b.dataset.view));
  $('window').addEventListener('submit', (e) => {
    e.preventDefault();
    loadPublishing().catch(report('pub-message'));
  });
  $('pub-zone').addEventListener('change', () => loadPublishing().catch(report('pub-message')));
  $('policy-zone').addEventListener('change', () => loadPolicy().catch(report('policy-message')));
  $('policy-form').addEventListener('submit', (e) => {
    e.preventDefault();
    savePolicy().catch(report('policy-message'));
  });
  $('policy-read').addEventListener('click', () => readPolicy().catch(report('policy-message')));
  $('policy-remove').addEventListener('click', () => removePolicy().catch(report('policy-message')));
  $('republish').addEventListener('click', () => republish().catch(report('pub-message')));
  $('fleet-zone').addEventListener('change', () => {
    clearTimeout(state.fleetTimer);
    state.map?.remove();
    state.map = null;
    state.layers = null;
    state.fitted = false;
    loadFleet().catch(report('fleet-status'));
  });
  if (state.key) login(state.key).catch(() => logout());
})();
