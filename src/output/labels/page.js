// The labelling page of `rageval label --serve`: one reply at a time, graded with the keyboard.
// Every label is sent to the server, which writes it to the labels file before it answers; the
// page moves on only then. Text from the replies and documents is set as text, never as markup.
"use strict";

const token = new URLSearchParams(location.search).get("token") || "";
let rows = [];
let pos = 0;
let history = [];
let busy = false;

function $(id) {
  return document.getElementById(id);
}

async function api(path, body) {
  const init = { method: body ? "POST" : "GET", headers: { "x-rageval-token": token } };
  if (body) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json();
  if (!response.ok) {
    throw new Error(data.error ? data.error.message : "HTTP " + response.status);
  }
  return data;
}

function unlabelled(row) {
  return row.refused === "" && row.correct === "";
}

function labelText(row) {
  if (row.refused === "yes") return "refused";
  if (row.refused === "no" || row.correct !== "") {
    const answered = row.refused === "no" ? "answered" : "(refusal as graded)";
    if (row.correct === "yes") return answered + ", correct";
    if (row.correct === "no") return answered + ", wrong";
    return answered;
  }
  return "none yet";
}

function gradedText(row) {
  if (row.graded_refused === "yes") return "refused (" + row.graded_by + ")";
  let text = "answered";
  if (row.graded_correct === "yes") text += ", correct";
  if (row.graded_correct === "no") text += ", wrong";
  if (row.graded_by) text += " (" + row.graded_by + ")";
  return text;
}

function render() {
  const labelled = rows.filter((r) => !unlabelled(r)).length;
  $("progress").textContent = labelled + " of " + rows.length + " labelled";
  document.body.dataset.pos = String(pos);
  const row = rows[pos];
  $("card").hidden = !row;
  $("done").hidden = !!row;
  if (!row) return;
  $("qid").textContent = row.question_id;
  $("answerable").textContent = row.answerable ? "(answerable)" : "(unanswerable: no answer in the documents)";
  $("question").textContent = row.question;
  $("expected").textContent = row.expected_answers || "(none)";
  $("reply").textContent = row.reply;
  $("graded").textContent = gradedText(row);
  $("label").textContent = labelText(row);
  $("passages").textContent = row.passages || "(none)";
}

function status(text, bad) {
  $("status").textContent = text;
  $("status").className = bad ? "bad" : "";
}

async function send(row, refused, correct) {
  await api("/api/label", { reply_id: row.reply_id, refused: refused, correct: correct });
  row.refused = refused;
  row.correct = correct;
}

async function grade(refused, correct) {
  const row = rows[pos];
  if (!row) return;
  const before = { pos: pos, refused: row.refused, correct: row.correct };
  await send(row, refused, correct);
  history.push(before);
  pos += 1;
  status("saved");
}

async function undo() {
  const last = history.pop();
  if (!last) {
    status("nothing to undo");
    return;
  }
  if (last.refused !== undefined) {
    await send(rows[last.pos], last.refused, last.correct);
  }
  pos = last.pos;
  status("undone");
}

const KEYS = {
  r: () => grade("yes", ""),
  a: () => grade("no", ""),
  c: () => grade("no", "yes"),
  w: () => grade("no", "no"),
  s: async () => {
    if (pos < rows.length) {
      history.push({ pos: pos });
      pos += 1;
      status("skipped");
    }
  },
  u: undo,
};

document.addEventListener("keydown", async (event) => {
  const act = KEYS[event.key];
  if (!act || event.ctrlKey || event.metaKey || event.altKey || busy) return;
  event.preventDefault();
  busy = true;
  document.body.dataset.busy = "1";
  try {
    await act();
  } catch (e) {
    status("not saved: " + e.message, true);
  }
  busy = false;
  delete document.body.dataset.busy;
  render();
});

async function start() {
  try {
    const data = await api("/api/rows");
    rows = data.rows;
    $("file").textContent = data.file;
    const first = rows.findIndex(unlabelled);
    pos = first < 0 ? rows.length : first;
    render();
    document.body.dataset.ready = "1";
  } catch (e) {
    status("cannot load the replies: " + e.message, true);
  }
}

start();
