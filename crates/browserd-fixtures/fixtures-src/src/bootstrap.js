// Bootstrap 5 (its own JavaScript and CSS from npm, unchanged) for the orders page, /apps/bootstrap-orders.html: the
// page's markup uses Bootstrap's data attributes (modal, dropdown, collapse), as server-rendered sites do, and this
// bundle adds the page's own handlers. Bootstrap's modal fades its backdrop in before it shows the dialog, and fades the
// backdrop out after the dialog has faded out.
import bootstrap from 'bootstrap/dist/js/bootstrap.bundle.js';
import css from 'bootstrap/dist/css/bootstrap.min.css';
import { record } from './record.js';

const style = document.createElement('style');
style.textContent = css;
document.head.append(style);

const confirm = document.getElementById('confirm');
const status = document.getElementById('status');
let order = null;
confirm.addEventListener('show.bs.modal', (event) => {
  order = event.relatedTarget ? event.relatedTarget.closest('tr').dataset.order : null;
  document.getElementById('confirm-order').textContent = order;
});
document.getElementById('confirm-delete').addEventListener('click', () => {
  record(`delete:${order}`);
  status.textContent = `Deleted order ${order}`;
  document.querySelector(`tr[data-order="${order}"]`).remove();
  bootstrap.Modal.getInstance(confirm).hide();
});
for (const item of document.querySelectorAll('[data-record]')) {
  item.addEventListener('click', (event) => {
    event.preventDefault();
    record(item.dataset.record);
    status.textContent = item.textContent;
  });
}
