// paperrec's web pages: send the like / dislike / not-now / undo forms in place, so the
// reader keeps their place in the list. Every form works without this script (a POST, then
// a redirect back); if anything goes wrong here the form is sent the ordinary way.
"use strict";

function announce(text) {
  const region = document.getElementById("announce");
  if (region) {
    region.textContent = text;
  }
}

document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.classList.contains("rate")) {
    return;
  }
  event.preventDefault();
  const buttons = form.closest(".actions").querySelectorAll("button");
  buttons.forEach((button) => { button.disabled = true; });
  let answer;
  try {
    const response = await fetch(form.action, {
      method: "POST",
      body: new FormData(form),
      headers: { Accept: "application/json" },
      credentials: "same-origin",
    });
    if (!response.ok) {
      throw new Error(String(response.status));
    }
    answer = await response.json();
  } catch (error) {
    form.submit();  // the server's answer page says what went wrong
    return;
  }
  announce(answer.message);
  const item = form.closest("li.paper");
  const inList = document.body.classList.contains("page-list");
  if (item && inList && answer.action !== "undo") {
    item.remove();  // rated or set aside: it leaves the list
  } else {
    window.location.reload();
  }
});
