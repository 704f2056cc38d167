import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { KbDocumentView, KnowledgeBaseView } from "../../../contract/app-api.ts";
import { ApiError } from "../api/api-error.ts";
import { t } from "../i18n/i18n.ts";
import { Link, navigate } from "../router.tsx";
import { ConfirmDialog } from "../ui/confirm-dialog.tsx";
import { ErrorNotice } from "../ui/error-notice.tsx";
import { installationName } from "../ui/installation.ts";
import { deleteBase, deleteDocument, kbErrorText, listDocuments, readBase } from "./kb-api.ts";
import { AskPanel } from "./kb-ask.tsx";
import { DocumentList, UploadZone } from "./kb-documents.tsx";
import { useUploads } from "./kb-upload.ts";

// While a document is being read the list is read again: often at first, then less.
const POLL_MS = [1000, 1000, 1500, 2000, 3000];

const pending = (document: KbDocumentView) =>
  document.status === "queued" || document.status === "processing";

/** `/kb/{slug}`: a base, its documents with their state (live), uploads, and questions to it. */
export function KnowledgeBasePage(props: { slug: string }) {
  const { slug } = props;
  const [base, setBase] = useState<KnowledgeBaseView>();
  const [documents, setDocuments] = useState<KbDocumentView[]>();
  const [notFound, setNotFound] = useState(false);
  const [failure, setFailure] = useState<string>();
  const [confirm, setConfirm] = useState<{ kind: "base" } | { kind: "document"; document: KbDocumentView }>();
  // Counts changes made here (an upload, a deletion): a list read before one of them is stale.
  const changes = useRef(0);

  useEffect(() => {
    let live = true;
    readBase(slug).then(
      ({ documents_list, ...read }) => {
        if (!live) return;
        setBase(read);
        setDocuments(documents_list);
      },
      (error: unknown) => {
        if (!live) return;
        if (error instanceof ApiError && error.status === 404) setNotFound(true);
        else setFailure(kbErrorText(error));
      },
    );
    return () => {
      live = false;
    };
  }, [slug]);

  useEffect(() => {
    document.title = `${base?.name ?? t("kb.title")} · ${installationName()}`;
  }, [base?.name]);

  const reading = documents?.some(pending) ?? false;
  useEffect(() => {
    if (!reading) return;
    let live = true;
    let round = 0;
    let timer: ReturnType<typeof setTimeout>;
    const look = async () => {
      const before = changes.current;
      try {
        const list = await listDocuments(slug);
        if (live && before === changes.current) setDocuments(list);
      } catch {
        // A missed look is made up by the next one.
      }
      if (live) timer = setTimeout(() => void look(), POLL_MS[Math.min(++round, POLL_MS.length - 1)]);
    };
    timer = setTimeout(() => void look(), POLL_MS[0]);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [reading, slug]);

  const onUploaded = useCallback((document: KbDocumentView) => {
    changes.current += 1;
    setDocuments((list) => [document, ...(list ?? []).filter((item) => item.id !== document.id)]);
  }, []);
  const uploads = useUploads(slug, onUploaded);

  const removeDocument = async (document: KbDocumentView) => {
    setConfirm(undefined);
    setFailure(undefined);
    try {
      await deleteDocument(slug, document.id);
    } catch (error) {
      // Already gone (replaced by a newer upload of the same name, or deleted in another tab).
      if (!(error instanceof ApiError && error.status === 404)) {
        setFailure(kbErrorText(error));
        return;
      }
    }
    changes.current += 1;
    setDocuments((list) => list?.filter((item) => item.id !== document.id));
  };

  const removeBase = async () => {
    setConfirm(undefined);
    setFailure(undefined);
    try {
      await deleteBase(slug);
      navigate("/kb");
    } catch (error) {
      setFailure(kbErrorText(error));
    }
  };

  if (notFound) {
    return (
      <section class="page kb-page">
        <p class="notice error" role="alert">
          {t("kb.notFound")}
        </p>
        <Link href="/kb">{t("kb.back")}</Link>
      </section>
    );
  }

  const owned = base?.owned ?? false;
  const ready = documents?.some((document) => document.status === "ready") ?? false;
  return (
    <section class="page kb-page kb-base-page" aria-labelledby="kb-base-title">
      <p class="kb-back">
        <Link href="/kb">← {t("kb.back")}</Link>
      </p>
      <header class="kb-base-header">
        <div class="kb-base-heading">
          <h1 id="kb-base-title">{base?.name ?? t("kb.title")}</h1>
          {base && !base.owned && <span class="kb-badge">{t("kb.shared")}</span>}
        </div>
        {owned && (
          <button
            type="button"
            class="danger-outline kb-small-button"
            onClick={() => setConfirm({ kind: "base" })}
          >
            {t("kb.deleteBase")}
          </button>
        )}
      </header>
      {base?.description && <p class="kb-base-description">{base.description}</p>}
      <ErrorNotice message={failure} />
      <div class="kb-columns">
        <div class="kb-column">
          <h2>{t("kb.documents")}</h2>
          {documents === undefined && failure === undefined && <p class="muted">{t("common.loading")}</p>}
          {base && !owned && <p class="muted small">{t("kb.sharedReadOnly")}</p>}
          {owned && <UploadZone onFiles={uploads.add} />}
          {documents && (
            <DocumentList
              documents={documents}
              uploads={uploads.items}
              owned={owned}
              onDismiss={uploads.dismiss}
              onDelete={(document) => setConfirm({ kind: "document", document })}
            />
          )}
        </div>
        <div class="kb-column">
          <AskPanel slug={slug} ready={documents === undefined || ready} />
        </div>
      </div>
      {confirm?.kind === "base" && base && (
        <ConfirmDialog
          title={t("kb.deleteBaseTitle")}
          text={t("kb.deleteBaseText", { name: base.name })}
          confirm={t("common.delete")}
          danger
          onConfirm={() => void removeBase()}
          onCancel={() => setConfirm(undefined)}
        />
      )}
      {confirm?.kind === "document" && (
        <ConfirmDialog
          title={t("kb.deleteDocumentTitle")}
          text={t("kb.deleteDocumentText", { name: confirm.document.filename })}
          confirm={t("common.delete")}
          danger
          onConfirm={() => void removeDocument(confirm.document)}
          onCancel={() => setConfirm(undefined)}
        />
      )}
    </section>
  );
}
