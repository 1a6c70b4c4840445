/** Text made safe to put in HTML, as element content or a quoted attribute value (server-rendered pages). */
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
