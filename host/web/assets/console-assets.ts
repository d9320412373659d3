/**
 * The console's stylesheet and script, served from the host itself (`script-src 'self'`, no inline code,
 * nothing from elsewhere: it works offline). The script is progressive: every page works without it; with
 * it, parts marked `data-live="<event>"` are fetched again from `data-src` when the server-sent event of that
 * name arrives, so two open pages see the same state without reloading or polling.
 */
export const CONSOLE_CSS = `
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,sans-serif;color:#1b1f24;background:#f6f7f9}
header{display:flex;flex-wrap:wrap;gap:.3rem 1rem;align-items:center;padding:.6rem 1rem;background:#1f2933;color:#fff}
header nav{display:flex;flex-wrap:wrap;gap:.2rem .8rem}
header a{color:#cfe3ff;text-decoration:none}
header a[aria-current]{color:#fff;font-weight:600;text-decoration:underline}
main{padding:1rem;max-width:70rem;margin:0 auto}
h1{font-size:1.3rem;margin:.2rem 0 1rem}
h2{font-size:1.1rem;margin:1.4rem 0 .6rem}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#fff;border:1px solid #d8dde3;padding:.6rem;border-radius:4px;margin:.4rem 0}
.card{background:#fff;border:1px solid #d8dde3;border-radius:6px;padding:.8rem;margin:0 0 .8rem}
.card pre{border:0;padding:0;background:none}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;width:100%;background:#fff;font-size:.9rem}
th,td{border-bottom:1px solid #e3e7ec;padding:.3rem .5rem;text-align:left;vertical-align:top}
td.wrap{overflow-wrap:anywhere;min-width:12rem}
form.inline{display:inline}
button{font:inherit;padding:.35rem .9rem;border-radius:4px;border:1px solid #8895a7;background:#fff;cursor:pointer}
button.approve{background:#1f7a3a;border-color:#1f7a3a;color:#fff}
button.deny{background:#a32020;border-color:#a32020;color:#fff}
.muted{color:#5d6a78}
.status{font-weight:600}
meter{width:5rem;vertical-align:middle}
.filters{display:flex;flex-wrap:wrap;gap:.5rem;margin-bottom:.8rem}
.filters input,.filters select{font:inherit;padding:.25rem;max-width:12rem}
.notice{background:#fff7d6;border:1px solid #e8d27a;padding:.6rem;border-radius:4px}
.ago,.offset{color:#5d6a78;font-size:.85em;white-space:nowrap}
time{white-space:nowrap}
footer{max-width:70rem;margin:0 auto;padding:0 1rem 1rem;font-size:.85rem}
form.message{display:grid;gap:.5rem;max-width:40rem}
form.message textarea{font:inherit;width:100%;padding:.4rem;border:1px solid #8895a7;border-radius:4px}
form.message button{justify-self:start}
pre.reply{margin:.5rem 0}
.push h3{font-size:1rem;margin:.2rem 0 .4rem}
.push ul{margin:.2rem 0 .6rem;padding-left:1.2rem}
.push li{margin:.2rem 0;overflow-wrap:anywhere}
.push .sha{font-family:ui-monospace,monospace;font-size:.85em}
/*
 * A phone: each table row becomes a card, each cell a line with its column's name (data-label) before the
 * value, so the decision, the reason and who decided are read without scrolling sideways.
 */
@media (max-width:40rem){
main{padding:.6rem}
.scroll{overflow-x:visible}
table.cards,table.cards tbody,table.cards tr,table.cards td{display:block;width:100%}
table.cards{background:none}
table.cards thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
table.cards tr{background:#fff;border:1px solid #d8dde3;border-radius:6px;margin:0 0 .6rem;padding:.35rem .6rem}
table.cards td{display:flow-root;border:0;padding:.15rem 0 .15rem 6.5rem;overflow-wrap:anywhere;min-width:0}
table.cards td::before{content:attr(data-label);float:left;width:6rem;margin-left:-6.5rem;color:#5d6a78;font-size:.85rem;font-weight:400;line-height:1.7;overflow-wrap:normal}
table.cards td:empty{display:none}
table.cards td[data-label=""]{padding-left:0}
table.cards td[data-label=""]::before{content:none}
time{white-space:normal}
}
`;

export const CONSOLE_JS = `
(function () {
  var live = document.querySelectorAll('[data-live]');
  if (!live.length || !window.EventSource) return;
  var source = new EventSource('/events');
  var refresh = function (name) {
    live.forEach(function (el) {
      if (el.getAttribute('data-live') !== name) return;
      fetch(el.getAttribute('data-src'), { credentials: 'same-origin', headers: { accept: 'text/html' } })
        .then(function (r) { if (r.ok) return r.text(); throw new Error('HTTP ' + r.status); })
        .then(function (text) { el.innerHTML = text; el.setAttribute('data-updated', String(Date.now())); })
        .catch(function () { el.setAttribute('data-stale', 'true'); });
    });
  };
  ['approvals', 'runs', 'chat'].forEach(function (name) {
    source.addEventListener(name, function () { refresh(name); });
  });
  // What changed between the page's render and the stream's start is fetched once it is open.
  source.addEventListener('open', function () {
    ['approvals', 'runs', 'chat'].forEach(refresh);
    document.body.setAttribute('data-live-ready', 'true');
  });
  source.addEventListener('bye', function () { source.close(); });
})();
`;
