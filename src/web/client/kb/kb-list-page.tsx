import { useEffect, useId, useState } from "preact/hooks";
import type { KnowledgeBaseView } from "../../../contract/app-api.ts";
import { t } from "../i18n/i18n.ts";
import { Link, navigate } from "../router.tsx";
import { ConfirmDialog } from "../ui/confirm-dialog.tsx";
import { ErrorNotice } from "../ui/error-notice.tsx";
import { fieldError } from "../ui/error-text.ts";
import { FormField } from "../ui/form-field.tsx";
import { installationName } from "../ui/installation.ts";
import { createBase, deleteBase, kbErrorText, listBases } from "./kb-api.ts";

const NAME_MAX = 128;
const DESCRIPTION_MAX = 1000;

/** `/kb`: the user's knowledge bases and the shared ones, a form to create one, and deleting one. */
export function KnowledgeBaseList() {
  const [bases, setBases] = useState<KnowledgeBaseView[]>();
  const [failure, setFailure] = useState<string>();
  const [deleting, setDeleting] = useState<KnowledgeBaseView>();

  useEffect(() => {
    document.title = `${t("kb.title")} · ${installationName()}`;
    let live = true;
    listBases().then(
      (list) => live && setBases(list),
      (error: unknown) => live && setFailure(kbErrorText(error)),
    );
    return () => {
      live = false;
    };
  }, []);

  const remove = async (base: KnowledgeBaseView) => {
    setDeleting(undefined);
    setFailure(undefined);
    try {
      await deleteBase(base.slug);
      setBases((list) => list?.filter((item) => item.slug !== base.slug));
    } catch (error) {
      setFailure(kbErrorText(error));
    }
  };

  return (
    <section class="page kb-page" aria-labelledby="kb-title">
      <h1 id="kb-title">{t("kb.title")}</h1>
      <p class="muted">{t("kb.intro")}</p>
      <ErrorNotice message={failure} />
      {bases === undefined && failure === undefined && <p class="muted">{t("common.loading")}</p>}
      {bases?.length === 0 && <p class="kb-empty">{t("kb.none")}</p>}
      {bases && bases.length > 0 && (
        <ul class="kb-bases">
          {bases.map((base) => (
            <li key={base.slug} class="kb-base-card">
              <div class="kb-base-main">
                <Link href={`/kb/${encodeURIComponent(base.slug)}`} class="kb-base-name">
                  {base.name}
                </Link>
                {!base.owned && <span class="kb-badge">{t("kb.shared")}</span>}
                {base.description && <p class="kb-base-description">{base.description}</p>}
                <p class="muted small kb-base-counts">
                  {t("kb.counts", { count: base.documents, ready: base.ready_documents })}
                </p>
              </div>
              {base.owned && (
                <button
                  type="button"
                  class="danger-outline kb-small-button"
                  aria-label={t("kb.deleteBaseNamed", { name: base.name })}
                  onClick={() => setDeleting(base)}
                >
                  {t("common.delete")}
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
      <CreateBaseForm />
      {deleting && (
        <ConfirmDialog
          title={t("kb.deleteBaseTitle")}
          text={t("kb.deleteBaseText", { name: deleting.name })}
          confirm={t("common.delete")}
          danger
          onConfirm={() => void remove(deleting)}
          onCancel={() => setDeleting(undefined)}
        />
      )}
    </section>
  );
}

/** Creates a base (`POST /rag/kb`: name, optional description) and opens it. */
function CreateBaseForm() {
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const descriptionId = useId();

  const submit = async (event: Event) => {
    event.preventDefault();
    if (busy || name.trim() === "") return;
    setBusy(true);
    setError(undefined);
    try {
      const trimmed = description.trim();
      const base = await createBase({ name: name.trim(), ...(trimmed ? { description: trimmed } : {}) });
      navigate(`/kb/${encodeURIComponent(base.slug)}`);
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };

  const nameError = fieldError(error, "name");
  const descriptionError = fieldError(error, "description");
  const general = error !== undefined && !nameError && !descriptionError ? kbErrorText(error) : undefined;
  return (
    <form class="kb-create" onSubmit={(event) => void submit(event)} aria-labelledby="kb-create-title">
      <h2 id="kb-create-title">{t("kb.createTitle")}</h2>
      <FormField
        label={t("kb.name")}
        name="name"
        value={name}
        required
        maxLength={NAME_MAX}
        autoComplete="off"
        error={nameError}
        onValue={setName}
      />
      <div class="field">
        <label for={descriptionId}>{t("kb.description")}</label>
        <textarea
          id={descriptionId}
          name="description"
          rows={2}
          maxLength={DESCRIPTION_MAX}
          value={description}
          aria-invalid={descriptionError ? "true" : undefined}
          onInput={(event) => setDescription(event.currentTarget.value)}
        />
        {descriptionError && <small class="field-error">{descriptionError}</small>}
      </div>
      <ErrorNotice message={general} />
      <div class="button-row">
        <button type="submit" class="primary" disabled={busy || name.trim() === ""}>
          {busy ? t("kb.creating") : t("kb.create")}
        </button>
      </div>
    </form>
  );
}
