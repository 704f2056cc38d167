import { afterAll, beforeAll, expect, it } from "vitest";
import type { LoginResponse } from "../../src/contract/app-api.ts";
import type { AppUserHandle } from "./app-helpers.ts";
import { login, PASSWORD, postJson, startSmtpServer, tokenOf } from "./auth-fixtures.ts";
import { CHAT_MODEL, type ChatStack, readConversation, sendMessage, startChatStack } from "./chat-stack.ts";

let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let s: ChatStack;

beforeAll(async () => {
  smtp = await startSmtpServer();
  s = await startChatStack({
    config: {
      app: { public_url: "https://chat.example.ch", mail: { smtp_url: smtp.url } },
    },
  });
});
afterAll(async () => {
  await s.close();
  await smtp.close();
});

/** A handle on the app API for a token that came from /auth/login. */
function userOf(token: string, accountId: string, email: string): AppUserHandle {
  const fetchApp = (path: string, init: RequestInit = {}) =>
    s.t.fetch(`/api/v1${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string> | undefined) },
    });
  return {
    accountId,
    email,
    token,
    fetch: fetchApp,
    post: (path, body, method = "POST") =>
      fetchApp(path, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
  };
}

it("the whole user journey over HTTP: register -> verify through the SMTP peer -> login -> create -> stream -> list -> rename -> delete", async () => {
  const email = `journey-${Date.now()}@example.com`;
  const registered = await postJson(s.t, "/auth/register", { email, password: PASSWORD, language: "it" });
  expect(registered.status).toBe(201);

  const mail = await smtp.next(email);
  const verified = await postJson(s.t, "/auth/verify-email", { token: tokenOf(mail.text, "verify-email") });
  expect(verified.status).toBe(200);

  const loggedIn = await login(s.t, email);
  expect(loggedIn.status).toBe(200);
  const session = (await loggedIn.json()) as LoginResponse;
  const user = userOf(session.access_token, session.user.id, email);

  const created = await user.post("/chat/sessions", {});
  expect(created.status).toBe(201);
  const conversation = (await created.json()) as { id: string; title: string; messages: unknown[] };
  expect(conversation).toMatchObject({ title: "Nuova chat", messages: [] });

  const { events } = await sendMessage(user, conversation.id, {
    content: "Ciao, come stai oggi?",
    model: CHAT_MODEL,
  });
  expect(events.at(-1)).toMatchObject({ type: "done", outcome: "ok", title_job_queued: true });
  const answer = events
    .filter((event) => event.type === "delta")
    .map((event) => event.text)
    .join("");
  expect(answer.length).toBeGreaterThan(0);
  await s.jobsIdle();

  const list = await user.fetch("/chat/sessions");
  const listed = (await list.json()) as Array<{ id: string; title: string; messages: unknown[] }>;
  expect(listed.map((item) => item.id)).toEqual([conversation.id]);
  expect(listed[0]?.messages).toEqual([]);
  expect(listed[0]?.title).not.toBe("Nuova chat");

  const full = await readConversation(user, conversation.id);
  expect(full.messages.map((message: { role: string }) => message.role)).toEqual(["user", "assistant"]);
  expect(full.messages[1].content).toBe(answer);

  const renamed = await user.post(`/chat/sessions/${conversation.id}`, { title: "Saluti" }, "PATCH");
  expect(renamed.status).toBe(200);
  expect(((await renamed.json()) as { title: string }).title).toBe("Saluti");

  const deleted = await user.fetch(`/chat/sessions/${conversation.id}`, { method: "DELETE" });
  expect(deleted.status).toBe(204);
  expect(await (await user.fetch("/chat/sessions")).json()).toEqual([]);
  expect((await user.fetch(`/chat/sessions/${conversation.id}`)).status).toBe(404);
});
