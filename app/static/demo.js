// The demo single-page app: same-origin calls only, the session cookie is HttpOnly and no token
// ever reaches this page. Every API call carries the CSRF header the backend requires.
"use strict";

const api = (path, options = {}) =>
  fetch(path, {
    credentials: "same-origin",
    ...options,
    headers: { "X-CSRF": "1", Accept: "application/json", ...(options.headers || {}) },
  });

const $ = (id) => document.getElementById(id);

function show(id, visible) {
  $(id).hidden = !visible;
}

// {"steam": {"hours": 3}} -> "steam: hours 3"; {"overall": 87.5} -> "overall 87.5"
function describe(object) {
  const parts = Object.entries(object).map(([name, value]) =>
    value !== null && typeof value === "object" ? `${name}: ${describe(value)}` : `${name} ${value}`,
  );
  return parts.length ? parts.join(typeof Object.values(object)[0] === "object" ? "; " : ", ") : "none";
}

function fill(list, entries) {
  list.replaceChildren();
  for (const [term, value] of entries) {
    const dt = document.createElement("dt");
    dt.textContent = term;
    const dd = document.createElement("dd");
    dd.textContent = typeof value === "object" ? describe(value) : String(value);
    list.append(dt, dd);
  }
}

async function errorText(response) {
  const type = response.headers.get("Content-Type") || "";
  if (!type.includes("application/json")) return (await response.text()).trim();
  const body = await response.json();
  if (typeof body.error === "string") return body.error;
  return (body.error && body.error.message) || response.statusText;
}

async function loadOwnProfile() {
  const response = await api("/api/v1/me/profile");
  if (!response.ok) {
    $("status").textContent = `Could not load your profile: ${await errorText(response)}`;
    return;
  }
  const { data } = await response.json();
  fill($("own-profile"), [
    ["Handle", data.handle],
    ["Display name", data.display_name],
    ["Stats", data.stats],
    ["Aggregate scores", data.aggregate_scores],
  ]);
  show("own", true);
}

// "Your sessions": one entry per signed-in browser of this user; each but this one can be ended.
async function loadSessions() {
  const response = await api("/auth/sessions");
  if (!response.ok) {
    $("sessions-result").textContent = await errorText(response);
    return;
  }
  const { sessions } = await response.json();
  const items = sessions.map((entry) => {
    const item = document.createElement("li");
    item.dataset.sessionId = entry.id;
    item.textContent = `${entry.user_agent}, signed in ${entry.started_at}, last used ${entry.last_used_at}`;
    if (entry.current) {
      item.append(" (this browser)");
      item.classList.add("current");
    } else {
      const end = document.createElement("button");
      end.type = "button";
      end.textContent = "End";
      end.addEventListener("click", () => endSession(entry.id));
      item.append(" ", end);
    }
    return item;
  });
  $("session-list").replaceChildren(...items);
  show("sessions", true);
}

async function endSession(id) {
  const response = await api(`/auth/sessions/${encodeURIComponent(id)}`, { method: "DELETE" });
  $("sessions-result").textContent = response.ok ? "Session ended." : await errorText(response);
  await loadSessions();
}

$("end-others").addEventListener("click", async () => {
  const response = await api("/auth/sessions", { method: "DELETE" });
  $("sessions-result").textContent = response.ok ? "Every other session ended." : await errorText(response);
  await loadSessions();
});

async function refreshSession() {
  const response = await api("/auth/session");
  const session = response.ok ? await response.json() : { authenticated: false };
  $("status").textContent = session.authenticated ? `Signed in as ${session.user}` : "Signed out";
  show("signin", !session.authenticated);
  if (session.authenticated) show("signin-hint", false);
  show("signout", session.authenticated);
  show("poke", session.authenticated);
  show("own", false);
  show("sessions", false);
  if (session.authenticated) await Promise.all([loadOwnProfile(), loadSessions()]);
}

$("lookup-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const username = $("lookup-username").value.trim();
  const response = await fetch(`/api/v1/users/${encodeURIComponent(username)}`, { credentials: "omit" });
  const result = $("lookup-result");
  if (!response.ok) {
    result.textContent = await errorText(response);
    return;
  }
  const profile = await response.json();
  const list = document.createElement("dl");
  fill(list, [
    ["Username", profile.username],
    ["Handle", profile.handle],
    ["Display name", profile.display_name],
    ["Aggregate scores", profile.aggregate_scores],
  ]);
  result.replaceChildren(list);
});

// Step-up (RFC 9470): the API wants a stronger or more recent sign-in before this poke. Signing in
// again with the acr_values / max_age it named comes back here with the target filled in.
function askForStepUp(error, username) {
  const query = new URLSearchParams({ return_to: `/?poke=${encodeURIComponent(username)}` });
  if (error.acr_values) query.set("acr_values", error.acr_values);
  if (error.max_age !== undefined) query.set("max_age", String(error.max_age));
  $("step-up-link").href = `/auth/login?${query}`;
  $("poke-result").textContent = `A stronger sign-in is needed: ${error.message}`;
  show("step-up", true);
}

$("poke-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const username = $("poke-username").value.trim();
  const response = await api("/api/v1/pokes", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ username }),
  });
  const result = $("poke-result");
  show("step-up", false);
  if (response.status === 401) {
    const body = await response.json().catch(() => ({}));
    if (body.error && body.error.code === "insufficient_user_authentication") {
      askForStepUp(body.error, username);
      return;
    }
    result.textContent = "Your session has ended; please sign in again.";
    await refreshSession();
    return;
  }
  const body = await response.json().catch(() => ({}));
  if (body.success) result.textContent = `Poked ${username}!`;
  else if (typeof body.error === "string") result.textContent = body.error;
  else result.textContent = (body.error && body.error.message) || "The poke failed.";
});

// Silent sign-in, once per tab: when this page has no session, ask the provider without any page of
// its own (prompt=none). With a provider session the browser comes back signed in; otherwise the
// callback sends it back here with ?signin_error=<code>. The flag in sessionStorage stops a loop.
const SILENT_TRIED = "silentSignInTried";
// The provider knows the user but needs a click (consent, an account choice, ...): say so.
const ONE_CLICK_AWAY = ["consent_required", "interaction_required", "account_selection_required"];

function takeSigninError() {
  const url = new URL(window.location.href);
  const code = url.searchParams.get("signin_error");
  if (code !== null) {
    url.searchParams.delete("signin_error");
    window.history.replaceState(null, "", url.pathname + url.search + url.hash);
  }
  return code;
}

async function start() {
  const code = takeSigninError();
  const response = await api("/auth/session");
  const session = response.ok ? await response.json() : { authenticated: false };
  if (!session.authenticated && code === null && !sessionStorage.getItem(SILENT_TRIED)) {
    sessionStorage.setItem(SILENT_TRIED, "1");
    const back = window.location.pathname + window.location.search;
    window.location.assign(`/auth/login?prompt=none&return_to=${encodeURIComponent(back)}`);
    return;
  }
  show("signin-hint", !session.authenticated && ONE_CLICK_AWAY.includes(code));
  await refreshSession();
}

$("poke-username").value = new URLSearchParams(window.location.search).get("poke") || "";
start();
