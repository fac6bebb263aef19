/**
 * The entry Pi loads (`package.json`, `pi.extensions`). Pi lists a local extension by its
 * path without the final `index.ts`, so this directory's name is what the startup
 * "Extensions" list shows: `pi-squad`, where `entrypoints/pi/index.ts` itself would be `pi`.
 */
export { default } from "../index.ts";
