//! Which language a capture is written in, from its function words.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lang {
    En,
    Fr,
    Es,
}

/// Function words distinctive enough to vote for a language.
#[rustfmt::skip]
pub(super) const LANG_EN: &[&str] = &[
    "the", "and", "is", "of", "to", "with", "that", "this", "it", "for", "are", "was", "why",
    "how", "what", "when", "in", "can", "you", "should",
];
#[rustfmt::skip]
pub(super) const LANG_FR: &[&str] = &[
    "le", "les", "des", "est", "une", "pour", "dans", "qui", "avec", "pas", "sur", "du", "au",
    "cette", "je", "nous", "vous", "ça", "pourquoi", "comment", "quand", "et", "peux",
];
#[rustfmt::skip]
pub(super) const LANG_ES: &[&str] = &[
    "el", "los", "las", "una", "para", "por", "con", "del", "está", "es", "cómo", "qué", "pero",
    "muy", "esto", "este", "esta", "porque", "cuando", "y", "puedes", "se",
];

pub(super) struct Words {
    pub(super) title_in: &'static str,
    pub(super) title_and: &'static str,
    pub(super) contents_of: &'static str,
    pub(super) changes_to: &'static str,
    pub(super) notes_on: &'static str,
    pub(super) files_in: &'static str,
    pub(super) use_of: &'static str,
}

impl Lang {
    pub(super) fn words(self) -> Words {
        match self {
            Lang::En => Words {
                title_in: "in",
                title_and: "and",
                contents_of: "Contents of",
                changes_to: "Changes to",
                notes_on: "Notes on",
                files_in: "Files in",
                use_of: "Use of",
            },
            Lang::Fr => Words {
                title_in: "dans",
                title_and: "et",
                contents_of: "Contenu de",
                changes_to: "Modifications de",
                notes_on: "Notes sur",
                files_in: "Fichiers dans",
                use_of: "Utilisation de",
            },
            Lang::Es => Words {
                title_in: "en",
                title_and: "y",
                contents_of: "Contenido de",
                changes_to: "Cambios en",
                notes_on: "Notas sobre",
                files_in: "Archivos en",
                use_of: "Uso de",
            },
        }
    }
}
