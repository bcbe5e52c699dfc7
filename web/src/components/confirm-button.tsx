import { useState } from "preact/hooks";

/**
 * A button whose action needs a second, explicit yes: a click turns it into
 * "`question` [`confirm`] [No]", with the focus on No (Enter twice does not confirm).
 */
export function ConfirmButton({
  label,
  question,
  confirm,
  onConfirm,
  disabled = false,
  class: cls = "link",
  ariaLabel,
}: {
  label: string;
  question: string;
  /** The yes button's text, naming the action ("Yes, revoke"). */
  confirm: string;
  onConfirm: () => void;
  disabled?: boolean;
  class?: string;
  ariaLabel?: string;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" class={cls} disabled={disabled} aria-label={ariaLabel} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    // biome-ignore lint/a11y/useSemanticElements: a group of two buttons and their question, not a form field set
    <span class="row confirm" role="group" aria-label={question}>
      {question}
      <button
        type="button"
        class="danger"
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
      >
        {confirm}
      </button>
      <button type="button" class="secondary" ref={(el) => el?.focus()} onClick={() => setAsking(false)}>
        No
      </button>
    </span>
  );
}
