//! Typed ids. Every table index in the core is one of these, never a bare
//! integer, so a terminal can't be used where an LR state is expected.
//! Construction from `usize` is checked: the compile limits keep every table
//! well below `u32::MAX`, and a violation is a bug worth a loud failure.

macro_rules! define_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default, serde::Serialize, serde::Deserialize)]
        pub struct $name(pub u32);

        impl $name {
            #[inline]
            pub fn from_usize(index: usize) -> Self {
                Self(u32::try_from(index).expect(concat!(stringify!($name), " overflow")))
            }
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

define_id!(
    /// A grammar terminal (lexed by the lexer DFA).
    TerminalId
);
define_id!(
    /// A rule of the source grammar (IR level).
    RuleId
);
define_id!(
    /// A symbol of the normal-form grammar that is a nonterminal.
    NonterminalId
);
define_id!(
    /// A production of the normal-form grammar.
    ProductionId
);
define_id!(
    /// A state of the combined lexer DFA.
    DfaStateId
);
define_id!(
    /// A lexer configuration: DFA state of the lexeme in progress plus pending exclusions.
    LexConfigId
);
define_id!(
    /// A state of the LR automaton.
    LrStateId
);
define_id!(
    /// A model vocabulary token.
    TokenId
);
define_id!(
    /// A node of the graph-structured stack.
    NodeId
);
