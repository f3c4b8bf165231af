//! The one font of the pictures. Text in a PNG is rasterised with `ab_glyph`, which knows no
//! system fonts: the crate carries DejaVu Sans (`assets/`, Bitstream Vera licence) and
//! registers it once.

use std::sync::Once;

use plotters::style::{register_font, FontStyle};

/// The family every text of the pictures asks for.
pub const FAMILY: &str = "sans-serif";

static DEJAVU_SANS: &[u8] = include_bytes!("../../../assets/DejaVuSans.ttf");

/// Registers the bundled font as [`FAMILY`] (once; later calls do nothing). Call it before
/// drawing text with plotters.
pub fn ensure_registered() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        assert!(
            register_font(FAMILY, FontStyle::Normal, DEJAVU_SANS).is_ok(),
            "the bundled DejaVu Sans is a valid TrueType font"
        );
    });
}
