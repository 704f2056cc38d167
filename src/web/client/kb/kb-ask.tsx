import { useEffect, useId, useRef, useState } from "preact/hooks";
import type { KbSource } from "../../../contract/app-api.ts";
import "./kb-ask.css";
import { t } from "../i18n/i18n.ts";
import { MarkdownView } from "../markdown/markdown-view.tsx";
import { ask, kbErrorText, QUESTION_MAX_CHARACTERS } from "./kb-api.ts";

/** A question asked on this page and its answer. */
interface Exchange {
  key: string;
  question: string;
  answer: string;
  sources: KbSource[];
  state: "streaming" | "done" | "failed" | "stopped";
  /** Why it failed, in the interface language. */
  failure?: string;
}

// The counter shows once the question nears the limit.
const COUNTER_FROM = QUESTION_MAX_CHARACTERS - 200;
let serial = 0;

/**
 * Asks the base (`POST /rag/kb/{slug}/chat`): the answer streams in as Markdown, with the passages
 * it was made from. The newest question comes first, under the box.
 */
export function AskPanel(props: { slug: string; ready: boolean }) {
  const { slug } = props;
  const [question, setQuestion] = useState("");
  const [exchanges, setExchanges] = useState<Exchange[]>([]);
  const [answering, setAnswering] = useState(false);
  const controller = useRef<AbortController | undefined>(undefined);
  const questionId = useId();
  const hintId = useId();

  useEffect(() => () => controller.current?.abort(), []);

  const submit = async () => {
    const text = question.trim();
    if (text === "" || answering || !props.ready) return;
    const key = `ask-${++serial}`;
    const change = (patch: Partial<Exchange>) =>
      setExchanges((list) => list.map((item) => (item.key === key ? { ...item, ...patch } : item)));
    setExchanges((list) => [{ key, question: text, answer: "", sources: [], state: "streaming" }, ...list]);
    setQuestion("");
    setAnswering(true);
    const stop = new AbortController();
    controller.current = stop;
    let answer = "";
    let outcome: "ok" | "error" | undefined;
    let failure: string | undefined;
    try {
      await ask(
        slug,
        text,
        (event) => {
          if (event.type === "sources") change({ sources: event.sources });
          else if (event.type === "delta") {
            answer += event.text;
            change({ answer });
          } else if (event.type === "error") failure = kbErrorText(event.code);
          else if (event.type === "done") outcome = event.outcome;
        },
        stop.signal,
      );
      if (outcome === "ok") change({ state: "done" });
      else change({ state: "failed", failure: failure ?? t("kb.error.upstream") });
    } catch (error) {
      if (stop.signal.aborted) change({ state: "stopped" });
      else change({ state: "failed", failure: kbErrorText(error) });
    } finally {
      controller.current = undefined;
      setAnswering(false);
    }
  };

  return (
    <section class="kb-ask" aria-labelledby="kb-ask-title">
      <h2 id="kb-ask-title">{t("kb.ask.title")}</h2>
      <form
        class="kb-ask-form"
        onSubmit={(event) => {
          event.preventDefault();
          void submit();
        }}
      >
        <label for={questionId} class="offscreen">
          {t("kb.ask.label")}
        </label>
        <textarea
          id={questionId}
          name="question"
          rows={3}
          maxLength={QUESTION_MAX_CHARACTERS}
          placeholder={t("kb.ask.placeholder")}
          value={question}
          aria-describedby={props.ready ? undefined : hintId}
          onInput={(event) => setQuestion(event.currentTarget.value)}
          onKeyDown={(event) => {
            if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
              event.preventDefault();
              void submit();
            }
          }}
        />
        <div class="kb-ask-row">
          {question.length >= COUNTER_FROM ? (
            <span class="muted small">
              {t("kb.ask.count", { count: question.length, max: QUESTION_MAX_CHARACTERS })}
            </span>
          ) : (
            <span />
          )}
          {answering ? (
            <button type="button" onClick={() => controller.current?.abort()}>
              {t("kb.ask.stop")}
            </button>
          ) : (
            <button type="submit" class="primary" disabled={!props.ready || question.trim() === ""}>
              {t("kb.ask.submit")}
            </button>
          )}
        </div>
        {!props.ready && (
          <p id={hintId} class="muted small">
            {t("kb.ask.notReady")}
          </p>
        )}
      </form>
      <div class="kb-answers">
        {exchanges.map((exchange) => (
          <ExchangeView key={exchange.key} exchange={exchange} />
        ))}
      </div>
    </section>
  );
}

function ExchangeView(props: { exchange: Exchange }) {
  const { exchange } = props;
  const streaming = exchange.state === "streaming";
  return (
    <article class={`kb-exchange ${exchange.state}`} aria-busy={streaming}>
      <p class="kb-question">{exchange.question}</p>
      <div class="kb-answer" aria-live="polite">
        {exchange.answer === "" && streaming ? (
          <span class="typing muted">{t("kb.ask.answering")}</span>
        ) : (
          exchange.answer !== "" && <MarkdownView source={exchange.answer} />
        )}
        {exchange.state === "stopped" && <p class="muted small">{t("kb.ask.stopped")}</p>}
        {exchange.state === "failed" && (
          <p class="notice error" role="alert">
            {exchange.failure}
          </p>
        )}
      </div>
      {exchange.sources.length > 0 && <Sources sources={exchange.sources} />}
    </article>
  );
}

// Longer passages are cut to a few lines until opened.
const LONG_PASSAGE = 280;

function Sources(props: { sources: KbSource[] }) {
  return (
    <section class="kb-sources" aria-label={t("kb.ask.sources")}>
      <h3>{t("kb.ask.sources")}</h3>
      <ol>
        {props.sources.map((source) => (
          <SourceItem key={source.index} source={source} />
        ))}
      </ol>
    </section>
  );
}

function SourceItem(props: { source: KbSource }) {
  const { source } = props;
  const [open, setOpen] = useState(false);
  const long = source.passage.length > LONG_PASSAGE;
  const where = [
    source.page !== null ? t("kb.ask.page", { page: source.page }) : undefined,
    source.section ?? undefined,
  ].filter((part): part is string => part !== undefined && part !== "");
  return (
    <li class="kb-source">
      <div class="kb-source-head">
        <span class="kb-source-index">[{source.index}]</span>
        <span class="kb-source-document">{source.document}</span>
        {where.length > 0 && <span class="muted small">{where.join(" · ")}</span>}
      </div>
      <blockquote class={open || !long ? "kb-passage" : "kb-passage clamped"}>{source.passage}</blockquote>
      {long && (
        <button
          type="button"
          class="link kb-passage-toggle"
          aria-expanded={open}
          onClick={() => setOpen(!open)}
        >
          {open ? t("kb.ask.showLess") : t("kb.ask.showMore")}
        </button>
      )}
    </li>
  );
}
