import { useId, useRef, useState } from "preact/hooks";
import type { KbDocumentView } from "../../../contract/app-api.ts";
import { type TextKey, t } from "../i18n/i18n.ts";
import { ACCEPTED_FILES, sizeText } from "./kb-api.ts";
import type { UploadItem } from "./kb-upload.ts";

/**
 * Where documents are added: a file picker (several files) and a drop area for files dragged onto
 * it. Zona judges each file by its content; the picker only offers the usual names.
 */
export function UploadZone(props: { onFiles: (files: File[]) => void }) {
  const input = useRef<HTMLInputElement>(null);
  const [over, setOver] = useState(false);
  const hintId = useId();
  const carriesFiles = (event: DragEvent) => event.dataTransfer?.types.includes("Files") ?? false;
  return (
    <section
      aria-label={t("kb.upload.area")}
      class={over ? "kb-dropzone over" : "kb-dropzone"}
      onDragEnter={(event) => {
        if (!carriesFiles(event)) return;
        event.preventDefault();
        setOver(true);
      }}
      onDragOver={(event) => {
        if (!carriesFiles(event)) return;
        event.preventDefault();
        if (event.dataTransfer) event.dataTransfer.dropEffect = "copy";
      }}
      onDragLeave={(event) => {
        const to = event.relatedTarget;
        if (!(to instanceof Node) || !event.currentTarget.contains(to)) setOver(false);
      }}
      onDrop={(event) => {
        event.preventDefault();
        setOver(false);
        const files = [...(event.dataTransfer?.files ?? [])];
        if (files.length > 0) props.onFiles(files);
      }}
    >
      <p class="kb-drop-text">{t("kb.upload.drop")}</p>
      <button type="button" class="primary" aria-describedby={hintId} onClick={() => input.current?.click()}>
        {t("kb.upload.choose")}
      </button>
      <input
        ref={input}
        type="file"
        class="offscreen"
        tabIndex={-1}
        aria-label={t("kb.upload.choose")}
        multiple
        accept={ACCEPTED_FILES}
        onChange={(event) => {
          const element = event.currentTarget;
          const files = [...(element.files ?? [])];
          // Cleared, so choosing the same file again is a change too.
          element.value = "";
          if (files.length > 0) props.onFiles(files);
        }}
      />
      <p id={hintId} class="muted small kb-drop-hint">
        {t("kb.upload.hint")}
      </p>
    </section>
  );
}

/** The uploads under way or refused, then the base's documents with their state. */
export function DocumentList(props: {
  documents: KbDocumentView[];
  uploads: UploadItem[];
  owned: boolean;
  onDismiss: (key: string) => void;
  onDelete: (document: KbDocumentView) => void;
}) {
  const { documents, uploads } = props;
  if (documents.length === 0 && uploads.length === 0)
    return <p class="muted kb-empty">{t("kb.noDocuments")}</p>;
  return (
    <ul class="kb-documents" aria-live="polite">
      {uploads.map((item) => (
        <UploadRow key={item.key} item={item} onDismiss={() => props.onDismiss(item.key)} />
      ))}
      {documents.map((document) => (
        <DocumentRow
          key={document.id}
          document={document}
          onDelete={props.owned ? () => props.onDelete(document) : undefined}
        />
      ))}
    </ul>
  );
}

function UploadRow(props: { item: UploadItem; onDismiss: () => void }) {
  const { item } = props;
  const percent = item.total > 0 ? Math.min(100, Math.round((item.loaded / item.total) * 100)) : 0;
  const failed = item.phase === "failed";
  return (
    <li class={`kb-doc kb-upload ${item.phase}`}>
      <div class="kb-doc-head">
        <span class="kb-doc-name">{item.name}</span>
        <span class="muted small">{sizeText(item.size)}</span>
        {failed && <span class="kb-status failed">{t("kb.upload.failed")}</span>}
      </div>
      {item.phase === "uploading" || item.phase === "checking" ? (
        <div class="kb-progress">
          <progress max={100} value={percent} aria-label={t("kb.upload.progress", { name: item.name })} />
          <span class="small">
            {item.phase === "checking" ? t("kb.upload.checking") : t("kb.upload.uploading", { percent })}
          </span>
        </div>
      ) : item.phase === "waiting" ? (
        <p class="muted small kb-doc-line">{t("kb.upload.waiting")}</p>
      ) : item.phase === "paused" ? (
        <p class="muted small kb-doc-line">{t("kb.upload.paused", { seconds: item.retryIn ?? 0 })}</p>
      ) : (
        <div class="kb-doc-failure" role="alert">
          <p class="kb-doc-error">{item.failure}</p>
          {item.detail && <p class="muted small kb-doc-line">{item.detail}</p>}
          <button type="button" class="kb-small-button" onClick={props.onDismiss}>
            {t("kb.upload.dismiss")}
          </button>
        </div>
      )}
    </li>
  );
}

const STATUS_TEXT: Record<KbDocumentView["status"], TextKey> = {
  queued: "kb.status.queued",
  processing: "kb.status.processing",
  ready: "kb.status.ready",
  failed: "kb.status.failed",
};

function DocumentRow(props: { document: KbDocumentView; onDelete: (() => void) | undefined }) {
  const { document } = props;
  const status = STATUS_TEXT[document.status] ? document.status : "queued";
  const facts = [document.format.toUpperCase(), sizeText(document.size_bytes)];
  if (status === "ready") {
    if (document.pages !== null) facts.push(t("kb.pages", { count: document.pages }));
    facts.push(t("kb.passages", { count: document.passages }));
  }
  return (
    <li class={`kb-doc ${status}`} data-status={status}>
      <div class="kb-doc-head">
        <span class="kb-doc-name">{document.filename}</span>
        <span class={`kb-status ${status}`}>{t(STATUS_TEXT[status])}</span>
        {props.onDelete && (
          <button
            type="button"
            class="kb-small-button kb-doc-delete"
            aria-label={t("kb.deleteDocumentNamed", { name: document.filename })}
            onClick={props.onDelete}
          >
            {t("common.delete")}
          </button>
        )}
      </div>
      <p class="muted small kb-doc-line">{facts.join(" · ")}</p>
      {status === "failed" && document.error && <p class="kb-doc-error">{document.error}</p>}
    </li>
  );
}
