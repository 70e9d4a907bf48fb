/** Build step: renders the sample tracks into the package's samples/ folder. */
import { ensureSampleMedia } from './samples';
import { PACKAGED_SAMPLES } from './sample-location';

ensureSampleMedia(PACKAGED_SAMPLES).then(
  (files) => console.log(`sample tracks: ${files.length} in ${PACKAGED_SAMPLES}`),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
