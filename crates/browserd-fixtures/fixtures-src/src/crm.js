// The customers page of a CRM (jQuery 3.7.1, the way many older products are still built): the markup is written
// as HTML strings and every click is handled by a jQuery listener delegated to the document (`$(document).on(event,
// selector, ...)`): no element has a listener of its own. Links are `href="#"`; the table has sortable headers with a
// caret glyph, a nameless checkbox per row, a name link, a status badge and a "⋮" button named only by `title`; a
// DataTables-style "Showing 1 to 5 of 12 entries" line and a pagination list whose "Previous" is disabled by CSS
// (`pointer-events: none`); a row's menu is appended to <body> and positioned by script next to its button, as
// Bootstrap dropdowns are; a cookie banner fixed at the bottom, first in <body>; a delete confirmation modal. A
// company filter (`autocomplete="off"`) shows its own suggestions 250 ms after the typing pauses, as debounced
// search-as-you-type lists do; a "Rows per page" spinner updates its `aria-valuenow` only once the field is left, as
// jQuery UI's spinner does. An owner filter and the tags to show are Select2 4.1 widgets over hidden `<select>`s,
// as admin pages built on jQuery have them: the chosen owner is drawn as a read-only textbox inside the combobox, the
// chosen tags as chips with remove buttons beside an inline search field.
import $ from 'jquery';
import select2 from 'select2';
import select2Css from 'select2/dist/css/select2.min.css';
import { record, pageData } from './record.js';

select2(window, $);
const data = pageData();
const PER_PAGE = 5;
const state = { page: 1, sort: null, dir: 1, checked: new Set(), query: '' };
const esc = (s) => $('<div>').text(String(s)).html();

function rows() {
  let list = data.customers.filter((c) => !state.query || c.name.toLowerCase().includes(state.query.toLowerCase()));
  if (state.sort) list = [...list].sort((a, b) => a[state.sort].localeCompare(b[state.sort]) * state.dir);
  return list;
}

function render() {
  const list = rows();
  const pages = Math.max(1, Math.ceil(list.length / PER_PAGE));
  const first = (state.page - 1) * PER_PAGE;
  const shown = list.slice(first, first + PER_PAGE);
  const caret = (key) => (state.sort === key ? (state.dir > 0 ? '▲' : '▼') : '↕');
  const head = data.columns
    // The sorted column says so, as DataTables marks it (`aria-sort`).
    .map((c) => `<th class="sortable" data-sort="${c.key}"${state.sort === c.key ? ` aria-sort="${state.dir > 0 ? 'ascending' : 'descending'}"` : ''}>${esc(c.label)} <span class="sort-icon">${caret(c.key)}</span></th>`)
    .join('');
  const body = shown
    .map(
      (c) => `<tr data-id="${c.id}">
        <td><input type="checkbox" class="row-check"${state.checked.has(c.id) ? ' checked' : ''}></td>
        <td><a href="#" class="c-name">${esc(c.name)}</a></td>
        <td>${esc(c.email)}</td><td>${esc(c.company)}</td>
        <td><span class="c-badge c-badge-${c.status.toLowerCase()}">${esc(c.status)}</span></td>
        <td><button type="button" class="btn-icon c-row-menu" title="Actions">⋮</button></td>
      </tr>`,
    )
    .join('');
  const pageItems = [
    `<li class="page-item${state.page === 1 ? ' disabled' : ''}"><a href="#" class="page-link" data-page="prev">Previous</a></li>`,
    ...Array.from({ length: pages }, (_, i) =>
      // Bootstrap 5's markup: the active page's item carries `aria-current`.
      `<li class="page-item${state.page === i + 1 ? ' active" aria-current="page' : ''}"><a href="#" class="page-link" data-page="${i + 1}">${i + 1}</a></li>`),
    `<li class="page-item${state.page === pages ? ' disabled' : ''}"><a href="#" class="page-link" data-page="next">Next</a></li>`,
  ].join('');
  $('#c-table').html(`<thead><tr><th><input type="checkbox" class="check-all" aria-label="Select all"></th>${head}<th>Status</th><th></th></tr></thead><tbody>${body}</tbody>`);
  $('#c-info').html(`Showing <b>${list.length ? first + 1 : 0}</b> to <b>${first + shown.length}</b> of <b>${list.length}</b> entries`);
  $('#c-pages').html(pageItems);
}

function closeMenu() {
  $('.c-dropdown').remove();
}

$(function () {
  $('#root').html(`
    <div class="c-cookie">We use cookies to improve your experience. <a href="#" class="c-cookie-more">Learn more</a>
      <button type="button" class="c-cookie-ok">Accept</button></div>
    <nav class="c-top"><a href="#" class="c-brand" data-nav="home">${esc(data.brand)}</a>
      ${data.nav.map((n, i) => `<a href="#" class="c-nav${i === 0 ? ' active" aria-current="page' : ''}" data-nav="${esc(n)}">${esc(n)}</a>`).join('')}</nav>
    <main class="c-main">
      <div class="c-head"><h1>Customers</h1>
        <input type="search" class="c-search" placeholder="Search customers">
        <span class="c-company-wrap"><input type="text" class="c-company" autocomplete="off" aria-label="Company"
          placeholder="Filter by company"></span>
        <button type="button" class="btn btn-light c-export"><i class="icon-download"></i> Export CSV</button></div>
      <div class="c-filters"><label for="c-owner">Owner</label>
        <select id="c-owner"><option value=""></option>${data.owners.map((o) => `<option>${esc(o)}</option>`).join('')}</select>
        <label for="c-tags">Tags</label>
        <select id="c-tags" multiple>${data.tags.map((t) => `<option${t.shown ? ' selected' : ''}>${esc(t.name)}</option>`).join('')}</select></div>
      <p class="c-selected">Selected: none</p>
      <table class="grid c-table" id="c-table"></table>
      <div class="c-foot"><div id="c-info" class="c-info"></div><ul id="c-pages" class="pagination"></ul>
        <label class="c-per-page-label">Rows per page <input class="c-per-page" role="spinbutton" value="5" size="3"
          aria-valuenow="5" aria-valuemin="5" aria-valuemax="20"></label></div>
    </main>`);
  render();
  $('<style>').text(select2Css).appendTo('head');
  $('#c-owner').select2({ placeholder: 'Any owner', width: '180px' });
  $('#c-tags').select2({ width: '260px' });
  $('#c-owner').on('change', function () {
    record(`owner:${$(this).val()}`);
  });
  $('#c-tags').on('change', function () {
    record(`tags:${($(this).val() || []).join(',')}`);
  });

  $(document).on('click', 'a[href="#"]', (e) => e.preventDefault());
  $(document).on('click', '[data-nav]', function () {
    record(`nav:${$(this).data('nav')}`);
  });
  $(document).on('click', '.c-cookie-more', () => record('cookie:more'));
  $(document).on('click', '.c-cookie-ok', () => {
    $('.c-cookie').remove();
    record('cookie:accept');
  });
  $(document).on('click', '.c-export', () => record('export'));
  $(document).on('input', '.c-search', function () {
    state.query = $(this).val();
    state.page = 1;
    render();
  });
  let suggestTimer = null;
  $(document).on('input', '.c-company', function () {
    clearTimeout(suggestTimer);
    const q = $(this).val().toLowerCase();
    suggestTimer = setTimeout(() => {
      $('.c-suggest').remove();
      const hits = [...new Set(data.customers.map((c) => c.company))].filter((c) => q && c.toLowerCase().includes(q));
      if (hits.length) {
        $('<ul class="c-suggest"></ul>')
          .html(hits.map((c) => `<li class="c-suggest-item">${esc(c)}</li>`).join(''))
          .insertAfter('.c-company');
      }
    }, 250);
  });
  $(document).on('click', '.c-suggest-item', function () {
    $('.c-company').val($(this).text());
    $('.c-suggest').remove();
    record(`company:${$(this).text()}`);
  });
  $(document).on('change', '.c-per-page', function () {
    $(this).attr('aria-valuenow', $(this).val());
    record(`per-page:${$(this).val()}`);
  });
  $(document).on('click', 'th.sortable', function () {
    const key = $(this).data('sort');
    state.dir = state.sort === key ? -state.dir : 1;
    state.sort = key;
    render();
    record(`sort:${key}`);
  });
  $(document).on('change', '.check-all', function () {
    const on = this.checked;
    rows().forEach((c) => (on ? state.checked.add(c.id) : state.checked.delete(c.id)));
    render();
    $('.check-all').prop('checked', on);
    $('.c-selected').text(`Selected: ${state.checked.size || 'none'}`);
    record(`check:all:${on}`);
  });
  $(document).on('change', '.row-check', function () {
    const id = $(this).closest('tr').data('id');
    if (this.checked) state.checked.add(id);
    else state.checked.delete(id);
    $('.c-selected').text(`Selected: ${state.checked.size || 'none'}`);
    record(`check:${id}`);
  });
  $(document).on('click', '.c-name', function () {
    record(`open:${$(this).closest('tr').data('id')}`);
  });
  $(document).on('click', '.page-link', function () {
    const to = $(this).data('page');
    const pages = Math.max(1, Math.ceil(rows().length / PER_PAGE));
    state.page = to === 'prev' ? Math.max(1, state.page - 1) : to === 'next' ? Math.min(pages, state.page + 1) : Number(to);
    render();
    record(`page:${to}`);
  });
  $(document).on('click', '.c-row-menu', function (e) {
    e.stopPropagation();
    closeMenu();
    const id = $(this).closest('tr').data('id');
    const at = $(this).offset();
    $(`<div class="c-dropdown" data-id="${id}"><a href="#" class="c-dd-item" data-act="edit">Edit</a><a href="#" class="c-dd-item" data-act="delete">Delete</a></div>`)
      .css({ top: at.top + $(this).outerHeight(), left: at.left - 100 })
      .appendTo('body');
    record(`menu:${id}`);
  });
  $(document).on('click', '.c-dd-item', function (e) {
    e.stopPropagation();
    const id = $(this).closest('.c-dropdown').data('id');
    const act = $(this).data('act');
    closeMenu();
    record(`${act}:${id}`);
    if (act === 'delete') {
      const name = data.customers.find((c) => c.id === id).name;
      $(`<div class="backdrop c-modal-backdrop"><div class="modal" role="dialog" aria-modal="true" aria-labelledby="c-modal-title">
          <h2 id="c-modal-title">Delete customer</h2><p>Delete ${esc(name)}? This cannot be undone.</p>
          <button type="button" class="c-modal-cancel">Cancel</button> <button type="button" class="c-modal-ok">Delete</button></div></div>`).appendTo('body');
    }
  });
  $(document).on('click', '.c-modal-cancel, .c-modal-ok', function () {
    record($(this).hasClass('c-modal-ok') ? 'delete:confirm' : 'delete:cancel');
    $('.c-modal-backdrop').remove();
  });
  $(document).on('click', closeMenu);
});
