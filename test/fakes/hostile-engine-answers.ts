/** How an answer of the hostile engine (hostile-engine-server.ts) is framed: one JSON text, SSE or NDJSON. */
export type Framing = "json" | "sse" | "ndjson";

/** A valid answer of one protocol, in pieces the hostile engine breaks the way it is told. */
export interface Answer {
  framing: Framing;
  contentType: string;
  /** One JSON text, or the complete events (lines) of a stream in order. */
  pieces: string[];
  /** How many trailing pieces finish the stream (finish, usage, [DONE] or `done: true`). */
  closing: number;
  /** A piece carrying `text` as generated content, framed like the others. */
  contentPiece(text: string): string;
  /** The opening of a JSON string that an endless body never closes, and what closes it into a valid answer (huge). */
  endless: { prefix: string; suffix: string };
}

type Json = Record<string, unknown>;

function inputCount(input: unknown): number {
  return Array.isArray(input) ? input.length : 1;
}

/** The valid answer of an answer path, framed as the protocol frames it; undefined for other paths. */
export function answerFor(path: string, body: Json): Answer | undefined {
  const model = typeof body.model === "string" ? body.model : "hostile";
  const created = Math.floor(Date.now() / 1000);
  const sse = (events: unknown[]) => [
    ...events.map((e) => `data: ${JSON.stringify(e)}\n\n`),
    "data: [DONE]\n\n",
  ];
  const ndjson = (lines: unknown[]) => lines.map((line) => `${JSON.stringify(line)}\n`);
  const usage = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 };
  const vector = [0.5, 0.25, 0.125, 0.0625];
  const stream =
    body.stream === true || (path.startsWith("/api/") && body.stream !== false && path !== "/api/embed");
  if (path === "/v1/chat/completions") {
    const base = { id: "chatcmpl-hostile", object: "chat.completion.chunk", created, model };
    const chunk = (delta: Json, finish: string | null = null) => ({
      ...base,
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
    if (!stream) {
      const message = { role: "assistant", content: "Hello world" };
      const text = JSON.stringify({
        id: "chatcmpl-hostile",
        object: "chat.completion",
        created,
        model,
        choices: [{ index: 0, message, finish_reason: "stop" }],
        usage,
      });
      return jsonAnswer(
        text,
        '{"id":"chatcmpl-hostile","choices":[{"index":0,"message":{"content":"',
        '"}}]}',
      );
    }
    const events = [
      chunk({ role: "assistant", content: "" }),
      chunk({ content: "Hello" }),
      chunk({ content: " world" }),
      chunk({}, "stop"),
      { ...base, choices: [], usage },
    ];
    return {
      framing: "sse",
      contentType: "text/event-stream",
      pieces: sse(events),
      closing: 3,
      contentPiece: (text) => sse([chunk({ content: text })])[0] ?? "",
      endless: {
        prefix: 'data: {"id":"chatcmpl-hostile","choices":[{"index":0,"delta":{"content":"',
        suffix: "",
      },
    };
  }
  if (path === "/v1/completions") {
    const base = { id: "cmpl-hostile", object: "text_completion", created, model };
    const piece = (text: string, finish: string | null = null) => ({
      ...base,
      choices: [{ index: 0, text, logprobs: null, finish_reason: finish }],
    });
    if (!stream) {
      const text = JSON.stringify({ ...base, choices: [piece("Hello world", "stop").choices[0]], usage });
      return jsonAnswer(text, '{"id":"cmpl-hostile","choices":[{"index":0,"text":"', '"}]}');
    }
    return {
      framing: "sse",
      contentType: "text/event-stream",
      pieces: sse([
        piece("Hello"),
        piece(" world"),
        piece("!"),
        piece("", "stop"),
        { ...base, choices: [], usage },
      ]),
      closing: 3,
      contentPiece: (text) => sse([piece(text)])[0] ?? "",
      endless: { prefix: 'data: {"id":"cmpl-hostile","choices":[{"index":0,"text":"', suffix: "" },
    };
  }
  if (path === "/api/chat" || path === "/api/generate") {
    const chat = path === "/api/chat";
    const line = (text: string, done = false) => ({
      model,
      created_at: new Date(created * 1000).toISOString(),
      ...(chat ? { message: { role: "assistant", content: text } } : { response: text }),
      done,
      ...(done ? { done_reason: "stop", prompt_eval_count: 5, eval_count: 2 } : {}),
    });
    const prefix = chat
      ? `{"model":"${model}","message":{"role":"assistant","content":"`
      : `{"model":"${model}","response":"`;
    if (!stream) return jsonAnswer(JSON.stringify(line("Hello world", true)), prefix, chat ? '"}}' : '"}');
    return {
      framing: "ndjson",
      contentType: "application/x-ndjson",
      pieces: ndjson([line("Hello"), line(" world"), line("!"), line("", true)]),
      closing: 1,
      contentPiece: (text) => ndjson([line(text)])[0] ?? "",
      endless: { prefix, suffix: "" },
    };
  }
  const count = inputCount(path === "/embed" ? body.inputs : body.input);
  if (path === "/v1/embeddings") {
    const data = Array.from({ length: count }, (_, index) => ({
      object: "embedding",
      index,
      embedding: vector,
    }));
    const text = JSON.stringify({
      object: "list",
      data,
      model,
      usage: { prompt_tokens: 3, total_tokens: 3 },
    });
    return jsonAnswer(
      text,
      '{"object":"list","data":[{"object":"embedding","index":0,"embedding":[],"x":"',
      '"}]}',
    );
  }
  if (path === "/api/embed") {
    const text = JSON.stringify({ model, embeddings: Array.from({ length: count }, () => vector) });
    return jsonAnswer(text, `{"model":"${model}","embeddings":[],"x":"`, '"}');
  }
  if (path === "/embed") {
    return jsonAnswer(JSON.stringify(Array.from({ length: count }, () => vector)), '[[0.5],"', '"]');
  }
  return undefined;
}

function jsonAnswer(text: string, prefix: string, suffix: string): Answer {
  return {
    framing: "json",
    contentType: "application/json",
    pieces: [text],
    closing: 0,
    contentPiece: (content) => content,
    endless: { prefix, suffix },
  };
}
