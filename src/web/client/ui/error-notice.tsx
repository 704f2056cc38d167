/** A failure told to the user (announced by screen readers); nothing when there is none. */
export function ErrorNotice(props: { message: string | undefined }) {
  if (!props.message) return null;
  return (
    <p class="notice error" role="alert">
      {props.message}
    </p>
  );
}
