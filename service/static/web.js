// paperrec's web pages: send the like / dislike / not-now / undo forms in place, so the
// reader keeps their place in the list: the paper stays where it is, showing its new state
// and an Undo button (the server renders them). Every form works without this script (a
// POST, then a redirect back to the paper's place on the page); if anything goes wrong here
// the form is sent the ordinary way.
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
  const actions = form.closest(".actions");
  actions.querySelectorAll("button").forEach((button) => { button.disabled = true; });
  let answer;
  try {
    // Not form.action: the form has an input named "action", which that property returns.
    const response = await fetch(form.getAttribute("action"), {
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
  const fresh = document.createElement("template");
  fresh.innerHTML = answer.html.trim();
  const replacement = fresh.content.firstElementChild;
  actions.replaceWith(replacement);
  const next = replacement.querySelector("button");
  if (next) {
    next.focus({ preventScroll: true });
  }
  announce(answer.message);
});
