export { screenToolLists } from "./screen-request.ts";
export { screenedEnvelopes } from "./envelopes.ts";
export { cutToolLists } from "./binary-cut.ts";
