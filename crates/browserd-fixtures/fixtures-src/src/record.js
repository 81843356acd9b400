// Tells the fixture site what the user did (POST /api/record), so a test can check that a click reached the page's
// handler; the server keeps the records in order. Also reads the data the server put in the page.
export function record(event) {
  fetch('/api/record', { method: 'POST', body: event, keepalive: true }).catch(() => {});
}

export function pageData() {
  return JSON.parse(document.getElementById('app-data').textContent);
}
